// moebench.gmm_up / gmm_down on DLPack tensors: moe::gmm_up and moe::gmm_down.
#include <tvm/ffi/function.h>

#include "views.hpp"

namespace moe::ffi {

namespace {

void gmm_up(const tvm::ffi::ObjectRef& h, int64_t tokens, tvm::ffi::TensorView x_sorted, tvm::ffi::TensorView offsets,
            tvm::ffi::TensorView w13, tvm::ffi::TensorView out_h, tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    const RefMap in{{"x_sorted", view(k, x_sorted, "x_sorted")}, {"offsets", view(k, offsets, "offsets")},
                    {"w13", view(k, w13, "w13")}};
    const RefMap out{{"h", view(k, out_h, "h")}};
    const std::int64_t rows = rows_of(in.at("x_sorted"), "x_sorted");
    check_views(k, tokens, rows, in, out);
    const Workspace ws = workspace_of(k, workspace);
    moe::gmm_up(k.kernel, tokens, in.at("x_sorted"), in.at("offsets"), in.at("w13"), out.at("h"), caller_stream(k),
                ws.data, ws.bytes);
  });
}

void gmm_down(const tvm::ffi::ObjectRef& h, int64_t tokens, tvm::ffi::TensorView act, tvm::ffi::TensorView offsets,
              tvm::ffi::TensorView w2, tvm::ffi::Optional<tvm::ffi::TensorView> row_weight,
              tvm::ffi::TensorView y_sorted, tvm::ffi::Optional<tvm::ffi::TensorView> workspace) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    RefMap in{{"h", view(k, act, "h")}, {"offsets", view(k, offsets, "offsets")}, {"w2", view(k, w2, "w2")}};
    if (row_weight.has_value()) in["row_weight"] = view(k, *row_weight, "row_weight");
    const RefMap out{{"y_sorted", view(k, y_sorted, "y_sorted")}};
    const std::int64_t rows = rows_of(in.at("h"), "h");
    check_views(k, tokens, rows, in, out);
    const Workspace ws = workspace_of(k, workspace);
    moe::gmm_down(k.kernel, tokens, in.at("h"), in.at("offsets"), in.at("w2"),
                  row_weight.has_value() ? &in.at("row_weight") : nullptr, out.at("y_sorted"), caller_stream(k),
                  ws.data, ws.bytes);
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(gmm_up, moe::ffi::gmm_up);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(gmm_down, moe::ffi::gmm_down);
