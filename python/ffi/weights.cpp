// moebench.prepare_weights on DLPack tensors: moe::prepare_weights, in host memory.
#include <tvm/ffi/function.h>

#include "moe/weights.hpp"
#include "views.hpp"

namespace moe::ffi {

namespace {

W13Layout layout_of(const std::string& name, int64_t block, const char* which) {
  if (name != "split" && name != "interleaved")
    throw Error(std::string("prepare_weights: ") + which + " '" + name + "' is not a w13 layout: use 'split' or 'interleaved'");
  return W13Layout{name == "interleaved", block};
}

void prepare_weights(tvm::ffi::TensorView from, tvm::ffi::TensorView to, const tvm::ffi::String& layout, int64_t block,
                     const tvm::ffi::String& from_layout, int64_t from_block) {
  guarded([&] {
    moe::prepare_weights(host_view(from, "prepare_weights", "w13"), layout_of(from_layout, from_block, "from_layout"),
                         host_view(to, "prepare_weights", "out"), layout_of(layout, block, "layout"));
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(prepare_weights, moe::ffi::prepare_weights);
