// Router kernels for 16-bit logits (bf16, f16), up to 8 experts per lane.
#include "router/cuda_kernels.cuh"

namespace moe::router {

void fill_kernels_16(KernelFns* t) {
  kern::fill_table<kShapes16Begin>(t, std::make_integer_sequence<int, kShapes32Begin - kShapes16Begin>{});
}

}  // namespace moe::router
