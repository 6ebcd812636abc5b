// Router kernels for wide rows (12 to 32 experts per lane, E up to 1024), both element sizes.
#include "router/cuda_kernels.cuh"

namespace moe::router {

void fill_kernels_wide(KernelFns* t) {
  kern::fill_table<kShapesWideBegin>(t, std::make_integer_sequence<int, kShapesPackedBegin - kShapesWideBegin>{});
}

}  // namespace moe::router
