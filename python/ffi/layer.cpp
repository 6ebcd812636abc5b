// moebench.moe_layer(kernel, logits, bias, x, w13, w2, bias13, bias2, out, workspace): the whole
// layer, intermediates in the caller's workspace (Kernel.workspace_bytes(T) bytes); moe_layer_fp8
// the same with e4m3 weights and their 128x128 block scales (a Kernel whose problem has
// dtype=fp8); moe_layer_w4 with 4-bit weights as checkpoints store them (dtype=mxfp4 | int4,
// docs/w4.md). bias13 and bias2 are the experts' biases of a problem that has them (gpt-oss).
#include <tvm/ffi/function.h>

#include <initializer_list>
#include <utility>

#include "views.hpp"

namespace moe::ffi {

namespace {

using tvm::ffi::ObjectRef;
using tvm::ffi::Optional;
using tvm::ffi::TensorView;
using Named = std::pair<const char*, Optional<TensorView>>;

// Every layer entry point is the layer's Kernel::run on the tensors it was given by name; an
// absent one is simply not passed, so check_views names a tensor the problem takes but did not
// get, or one it does not take (a scale of a bf16 problem, zero points of a symmetric one, a
// bias of a problem without biases).
void run_layer(const ObjectRef& h, std::initializer_list<Named> inputs, const TensorView& out,
               const Optional<TensorView>& workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in;
    for (const auto& [name, t] : inputs)
      if (t.has_value()) in[name] = view(k, t.value(), name);
    const RefMap o{{"out", view(k, out, "out")}};
    const std::int64_t T = rows_of(in.at("x"), "x");
    check_views(k, T, T, in, o);
    const Workspace ws = workspace_of(k, workspace);
    k.kernel.run(T, in, o, caller_stream(k), ws.data, ws.bytes);
  });
}

void moe_layer(const ObjectRef& h, TensorView logits, Optional<TensorView> bias, TensorView x, TensorView w13,
               TensorView w2, Optional<TensorView> bias13, Optional<TensorView> bias2, TensorView out,
               Optional<TensorView> workspace) {
  run_layer(h, {{"logits", logits}, {"bias", bias}, {"x", x}, {"w13", w13}, {"w2", w2}, {"bias13", bias13},
                {"bias2", bias2}},
            out, workspace);
}

void moe_layer_fp8(const ObjectRef& h, TensorView logits, Optional<TensorView> bias, TensorView x, TensorView w13,
                   TensorView w13_scale, TensorView w2, TensorView w2_scale, TensorView out,
                   Optional<TensorView> workspace) {
  run_layer(h, {{"logits", logits}, {"bias", bias}, {"x", x}, {"w13", w13}, {"w13_scale", w13_scale}, {"w2", w2},
                {"w2_scale", w2_scale}},
            out, workspace);
}

void moe_layer_w4(const ObjectRef& h, TensorView logits, Optional<TensorView> bias, TensorView x, TensorView w13,
                  TensorView w13_scale, Optional<TensorView> w13_zero, TensorView w2, TensorView w2_scale,
                  Optional<TensorView> w2_zero, Optional<TensorView> bias13, Optional<TensorView> bias2,
                  TensorView out, Optional<TensorView> workspace) {
  run_layer(h, {{"logits", logits}, {"bias", bias}, {"x", x}, {"w13", w13}, {"w13_scale", w13_scale},
                {"w13_zero", w13_zero}, {"w2", w2}, {"w2_scale", w2_scale}, {"w2_zero", w2_zero},
                {"bias13", bias13}, {"bias2", bias2}},
            out, workspace);
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer, moe::ffi::moe_layer);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer_fp8, moe::ffi::moe_layer_fp8);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer_w4, moe::ffi::moe_layer_w4);
