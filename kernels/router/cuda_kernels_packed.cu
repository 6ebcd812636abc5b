// Router kernels for wide rows packed several to a warp (8 or 16 lanes, 16 to 32 experts per
// lane), both element sizes.
#include "router/cuda_kernels.cuh"

namespace moe::router {

void fill_kernels_packed(KernelFns* t) {
  kern::fill_table<kShapesPackedBegin>(t, std::make_integer_sequence<int, kShapeCount - kShapesPackedBegin>{});
}

}  // namespace moe::router
