// The dispatch validator allows nothing: every output must equal the reference bit for bit.
// Its edges are therefore the reference itself (accepted) and the smallest possible change of
// each output (rejected, naming it): one ulp in x_sorted per dtype, one step in an entry of
// offsets, src or dst.
#include <gtest/gtest.h>

#include <cstring>

#include "dispatch/family.hpp"
#include "support/prepared_problems.hpp"
#include "support/tolerance_edges.hpp"

namespace {

using namespace moe;

tuner::Prepared problem(const std::string& dtype) {
  const Params p{{"tokens", std::int64_t{20}}, {"experts", std::int64_t{8}}, {"topk", std::int64_t{2}},
                 {"shared", std::int64_t{1}},  {"hidden", std::int64_t{64}}, {"dtype", dtype},
                 {"align", std::int64_t{4}}};
  return moe::testing::prepare_seeded(dispatch_family(), p, {}, "uniform", 51);
}

// The reference's x_sorted with its largest element one ulp further from zero.
Tensor one_ulp_off(const Tensor& ref) {
  Tensor t = ref;
  const std::int64_t i = moe::testing::largest_finite(ref);
  auto* bytes = static_cast<unsigned char*>(t.raw()) + i * dtype_size(t.dtype());
  if (dtype_size(t.dtype()) == 2) {
    std::uint16_t u;
    std::memcpy(&u, bytes, 2);
    ++u;
    std::memcpy(bytes, &u, 2);
  } else {
    std::uint32_t u;
    std::memcpy(&u, bytes, 4);
    ++u;
    std::memcpy(bytes, &u, 4);
  }
  return t;
}

// The reference's int32 tensor with entry i moved by one.
Tensor one_step_off(const Tensor& ref, std::int64_t i) {
  Tensor t = ref;
  t.data<std::int32_t>()[i] += 1;
  return t;
}

TEST(DispatchValidationEdges, ExactReferenceAcceptedAndEveryOutputOneStepOffRejected) {
  for (const char* dt : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(dt);
    const auto p = problem(dt);
    moe::testing::expect_accepts(moe::testing::judge(p, "x_sorted", p.reference.at("x_sorted")), "the reference");
    const Tensor x = one_ulp_off(p.reference.at("x_sorted"));
    ASSERT_NE(x.get(moe::testing::largest_finite(x)), p.reference.at("x_sorted").get(moe::testing::largest_finite(x)));
    moe::testing::expect_rejects(moe::testing::judge(p, "x_sorted", x), "x_sorted");
    // An interior boundary, a row's source slot, a slot's row: each one off.
    const std::int64_t E = p.reference.at("offsets").numel() - 1;
    moe::testing::expect_rejects(moe::testing::judge(p, "offsets", one_step_off(p.reference.at("offsets"), E / 2)), "offsets");
    moe::testing::expect_rejects(moe::testing::judge(p, "src", one_step_off(p.reference.at("src"), 0)), "src");
    moe::testing::expect_rejects(moe::testing::judge(p, "dst", one_step_off(p.reference.at("dst"), 1)), "dst");
  }
}

}  // namespace
