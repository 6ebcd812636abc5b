#pragma once
// Host tensors (owning) and views (host or device memory). A family's backends work on
// views, so the same run() signature serves the cpu backend and the cuda backend.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "moe/dtype.hpp"

namespace moe {

using Shape = std::vector<std::int64_t>;
std::int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[64, 8]"

struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  std::int64_t numel() const { return moe::numel(shape); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
  template <class T> T* as() const { return static_cast<T*>(data); }
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // A view of `t`'s elements, to read where a TensorMap is asked for without copying (a
  // model's weights are tens of GB). Copies of it are views too; it must not outlive `t`.
  static Tensor borrow(const Tensor& t);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return moe::numel(shape_); }
  std::size_t nbytes() const { return view_ ? static_cast<std::size_t>(numel()) * dtype_size(dtype_) : bytes_.size(); }
  void* raw() { return base(); }
  const void* raw() const { return base(); }
  template <class T> T* data() { return reinterpret_cast<T*>(base()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(base()); }

  // Element access through float/double for any floating dtype (and ints, for convenience).
  double get(std::int64_t i) const;
  void set(std::int64_t i, double v);

  TensorRef ref() { return {base(), dtype_, shape_}; }
  TensorRef ref() const { return {base(), dtype_, shape_}; }

 private:
  std::byte* base() const { return view_ ? view_ : const_cast<std::byte*>(bytes_.data()); }
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<std::byte> bytes_;
  std::byte* view_ = nullptr;  // a borrowed tensor's elements (bytes_ then empty)
};

using TensorMap = std::map<std::string, Tensor>;
using RefMap = std::map<std::string, TensorRef>;

RefMap refs(TensorMap& m);
// Fetches a view by name or throws an Error naming the family's missing tensor.
const TensorRef& need(const RefMap& m, const std::string& name);

// Fills every element with a value that no backend would produce by accident: NaN for
// floats, 0x5EADBEEF for integers. Used on outputs before each run so unwritten elements show.
void poison_host(TensorRef t);
bool is_poison(DType t, const void* elem);

}  // namespace moe
