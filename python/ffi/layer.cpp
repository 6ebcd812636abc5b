// moebench.moe_layer(kernel, logits, bias, x, w13, w2, out, workspace): the whole layer,
// intermediates in the caller's workspace (Kernel.workspace_bytes(T) bytes); moe_layer_fp8 the
// same with e4m3 weights and their 128x128 block scales (a Kernel whose problem has dtype=fp8);
// moe_layer_w4 with 4-bit weights as checkpoints store them (dtype=mxfp4 | int4, docs/w4.md).
#include <tvm/ffi/function.h>

#include "views.hpp"

namespace moe::ffi {

namespace {

void moe_layer(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView logits, tvm::ffi::Optional<tvm::ffi::TensorView> bias,
               tvm::ffi::TensorView x, tvm::ffi::TensorView w13, tvm::ffi::TensorView w2, tvm::ffi::TensorView out,
               tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in{{"logits", view(k, logits, "logits")}, {"x", view(k, x, "x")}, {"w13", view(k, w13, "w13")},
              {"w2", view(k, w2, "w2")}};
    if (bias.has_value()) in["bias"] = view(k, *bias, "bias");
    const RefMap o{{"out", view(k, out, "out")}};
    const std::int64_t T = rows_of(in.at("x"), "x");
    check_views(k, T, T, in, o);
    const Workspace ws = workspace_of(k, workspace);
    moe::moe_layer(k.kernel, in.at("logits"), bias.has_value() ? &in.at("bias") : nullptr, in.at("x"), in.at("w13"),
                   in.at("w2"), o.at("out"), caller_stream(k), ws.data, ws.bytes);
  });
}

void moe_layer_fp8(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView logits, tvm::ffi::Optional<tvm::ffi::TensorView> bias,
                   tvm::ffi::TensorView x, tvm::ffi::TensorView w13, tvm::ffi::TensorView w13_scale, tvm::ffi::TensorView w2,
                   tvm::ffi::TensorView w2_scale, tvm::ffi::TensorView out, tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in{{"logits", view(k, logits, "logits")}, {"x", view(k, x, "x")},
              {"w13", view(k, w13, "w13")},          {"w13_scale", view(k, w13_scale, "w13_scale")},
              {"w2", view(k, w2, "w2")},             {"w2_scale", view(k, w2_scale, "w2_scale")}};
    if (bias.has_value()) in["bias"] = view(k, *bias, "bias");
    const RefMap o{{"out", view(k, out, "out")}};
    const std::int64_t T = rows_of(in.at("x"), "x");
    // A bf16 problem has no scales: check_views names the scale it does not take.
    check_views(k, T, T, in, o);
    const Workspace ws = workspace_of(k, workspace);
    moe::moe_layer_fp8(k.kernel, in.at("logits"), bias.has_value() ? &in.at("bias") : nullptr, in.at("x"),
                       in.at("w13"), in.at("w13_scale"), in.at("w2"), in.at("w2_scale"), o.at("out"), caller_stream(k),
                       ws.data, ws.bytes);
  });
}

void moe_layer_w4(const tvm::ffi::ObjectRef& h, tvm::ffi::TensorView logits, tvm::ffi::Optional<tvm::ffi::TensorView> bias,
                  tvm::ffi::TensorView x, tvm::ffi::TensorView w13, tvm::ffi::TensorView w13_scale,
                  tvm::ffi::Optional<tvm::ffi::TensorView> w13_zero, tvm::ffi::TensorView w2, tvm::ffi::TensorView w2_scale,
                  tvm::ffi::Optional<tvm::ffi::TensorView> w2_zero, tvm::ffi::TensorView out,
                  tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in{{"logits", view(k, logits, "logits")}, {"x", view(k, x, "x")},
              {"w13", view(k, w13, "w13")},          {"w13_scale", view(k, w13_scale, "w13_scale")},
              {"w2", view(k, w2, "w2")},             {"w2_scale", view(k, w2_scale, "w2_scale")}};
    if (bias.has_value()) in["bias"] = view(k, *bias, "bias");
    if (w13_zero.has_value()) in["w13_zero"] = view(k, *w13_zero, "w13_zero");
    if (w2_zero.has_value()) in["w2_zero"] = view(k, *w2_zero, "w2_zero");
    const RefMap o{{"out", view(k, out, "out")}};
    const std::int64_t T = rows_of(in.at("x"), "x");
    // A problem without these tensors (bf16; int4 without zero points) names the one it does not take.
    check_views(k, T, T, in, o);
    const Workspace ws = workspace_of(k, workspace);
    auto opt = [&](const char* n) { return in.count(n) ? &in.at(n) : nullptr; };
    moe::moe_layer_w4(k.kernel, in.at("logits"), opt("bias"), in.at("x"), in.at("w13"), in.at("w13_scale"), opt("w13_zero"),
                      in.at("w2"), in.at("w2_scale"), opt("w2_zero"), o.at("out"), caller_stream(k), ws.data, ws.bytes);
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer, moe::ffi::moe_layer);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer_fp8, moe::ffi::moe_layer_fp8);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(moe_layer_w4, moe::ffi::moe_layer_w4);
