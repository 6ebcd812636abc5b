// The plain 4-bit decode kernels (silu(gate)*up on split w13, no biases) and the launch of any
// planned 4-bit kernel. Split-K's finalize is the bf16 kernel's (mma/cuda_finalize.cu), planned
// by the host half.
#include "gmm/w4_mma/w4_mma_instances.cuh"
#include "moe/cuda_launch_api.hpp"

namespace moe::gmm::w4_mma {

template cuda::PlannedLaunch plan_main_of<false>(const cuda::TileShape&, bool, bool, const Args&);

void launch(const cuda::PlannedLaunch& p, const Args& a, void* stream) {
  if (p.grid == 0) return;
  if (p.launch) return p.launch(p, a.b, stream);  // the schedule, pad-row and split-K finalize kernels
  Args by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

}  // namespace moe::gmm::w4_mma
