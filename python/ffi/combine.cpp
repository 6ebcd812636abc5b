// moebench.combine(kernel, y_sorted, dst, weights, out): moe::combine on DLPack tensors.
#include <tvm/ffi/function.h>

#include "views.hpp"

namespace moe::ffi {

namespace {

// On host memory dst is read before the kernel trusts it: a row past y_sorted's end would be read
// out of bounds. (On a device it is the caller's dispatch's.)
void check_dst(const KernelObj& k, const TensorRef& dst, std::int64_t rows) {
  if (k.backend == Backend::cuda || dst.dtype != DType::i32) return;
  const auto* d = dst.as<const std::int32_t>();
  for (std::int64_t i = 0; i < dst.numel(); ++i)
    if (d[i] < -1 || d[i] >= rows)
      throw Error("combine: dst[" + std::to_string(i) + "] = " + std::to_string(d[i]) + " is no row of the " +
                  std::to_string(rows) + " in y_sorted (-1: none): pass dispatch's dst");
}

void combine(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView y_sorted, tvm::ffi::TensorView dst,
             tvm::ffi::TensorView weights, tvm::ffi::TensorView out) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    const RefMap in{{"y_sorted", view(k, y_sorted, "y_sorted")}, {"dst", view(k, dst, "dst")},
                    {"weights", view(k, weights, "weights")}};
    const RefMap o{{"out", view(k, out, "out")}};
    check_views(k, rows_of(in.at("weights"), "weights"), rows_of(in.at("y_sorted"), "y_sorted"), in, o);
    check_dst(k, in.at("dst"), rows_of(in.at("y_sorted"), "y_sorted"));
    moe::combine(k.kernel, in.at("y_sorted"), in.at("dst"), in.at("weights"), o.at("out"), caller_stream(k));
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(combine, moe::ffi::combine);
