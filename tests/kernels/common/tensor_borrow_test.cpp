// Tensor::borrow: a view where a TensorMap is asked for, so a layer's reference reads its weights
// without copying them.
#include <gtest/gtest.h>

#include "common/rng.hpp"
#include "common/routing_gen.hpp"
#include "moe/tensor.hpp"

using namespace moe;

TEST(TensorBorrow, ViewsTheSameElementsWithoutCopying) {
  Rng rng(7);
  Tensor t = random_tensor(DType::bf16, {33, 17}, rng);
  const Tensor v = Tensor::borrow(t);
  EXPECT_EQ(v.raw(), t.raw());
  EXPECT_EQ(v.dtype(), DType::bf16);
  EXPECT_EQ(v.shape(), t.shape());
  EXPECT_EQ(v.nbytes(), t.nbytes());
  EXPECT_EQ(v.ref().data, t.raw());
  // Copies of a view are views; a write to the tensor shows through every one of them.
  const Tensor c = v;
  t.set(100, 3.0);
  EXPECT_EQ(v.get(100), 3.0);
  EXPECT_EQ(c.get(100), 3.0);
  EXPECT_EQ(c.raw(), t.raw());
  // An owning copy stays a copy.
  Tensor own = t;
  own.set(100, -1.0);
  EXPECT_EQ(t.get(100), 3.0);
  EXPECT_NE(own.raw(), t.raw());
}
