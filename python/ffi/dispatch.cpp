// moebench.dispatch(kernel, x, ids, offsets, src, dst, x_sorted, workspace): moe::dispatch on
// DLPack tensors. Rows after dispatch depend on the routing, so src and x_sorted are sized for
// the most any routing produces (dispatch_max_rows); the rows past offsets[-1] are unused.
#include <tvm/ffi/function.h>

#include "dispatch/spec.hpp"
#include "views.hpp"

namespace moe::ffi {

namespace {

DispatchSpec spec_at(const KernelObj& k, std::int64_t tokens) {
  if (k.kernel.family().name != "dispatch")
    throw Error("dispatch needs a Kernel of the dispatch family, got '" + k.kernel.family().name + "'");
  Params p = k.kernel.problem();
  p.set("tokens", checked_tokens(k, tokens));
  return DispatchSpec::parse(p);
}

int64_t dispatch_max_rows(const tvm::ffi::ObjectRef& h, int64_t tokens) {
  return guarded([&] { return spec_at(kernel_of(h), tokens).max_rows(); });
}

void dispatch(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView x, tvm::ffi::TensorView ids,
              tvm::ffi::TensorView offsets, tvm::ffi::TensorView src, tvm::ffi::TensorView dst,
              tvm::ffi::TensorView x_sorted, tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    const RefMap in{{"x", view(k, x, "x")}, {"ids", view(k, ids, "ids")}};
    const RefMap out{{"offsets", view(k, offsets, "offsets")}, {"src", view(k, src, "src")},
                     {"dst", view(k, dst, "dst")}, {"x_sorted", view(k, x_sorted, "x_sorted")}};
    const std::int64_t T = rows_of(in.at("x"), "x");
    spec_at(k, T);
    check_views(k, T, T, in, out);
    const Workspace ws = workspace_of(k, workspace);
    moe::dispatch(k.kernel, in.at("x"), in.at("ids"), out.at("offsets"), out.at("src"), out.at("dst"),
                  out.at("x_sorted"), caller_stream(k), ws.data, ws.bytes);
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(dispatch_max_rows, moe::ffi::dispatch_max_rows);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(dispatch, moe::ffi::dispatch);
