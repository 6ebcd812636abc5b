// Router kernels for fp32 logits, up to 8 experts per lane.
#include "router/cuda_kernels.cuh"

namespace moe::router {

void fill_kernels_32(KernelFns* t) {
  kern::fill_table<kShapes32Begin>(t, std::make_integer_sequence<int, kShapesWideBegin - kShapes32Begin>{});
}

}  // namespace moe::router
