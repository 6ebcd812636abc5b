// moebench.router(kernel, logits, bias, weights, ids): moe::router on DLPack tensors.
#include <tvm/ffi/function.h>

#include "views.hpp"

namespace moe::ffi {

namespace {

void router(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView logits, tvm::ffi::Optional<tvm::ffi::TensorView> bias,
            tvm::ffi::TensorView weights, tvm::ffi::TensorView ids) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in{{"logits", view(k, logits, "logits")}};
    if (bias.has_value()) in["bias"] = view(k, *bias, "bias");
    const RefMap out{{"weights", view(k, weights, "weights")}, {"ids", view(k, ids, "ids")}};
    const std::int64_t T = rows_of(in.at("logits"), "logits");
    check_views(k, T, T, in, out);
    moe::router(k.kernel, in.at("logits"), bias.has_value() ? &in.at("bias") : nullptr, out.at("weights"),
                out.at("ids"), caller_stream(k));
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(router, moe::ffi::router);
