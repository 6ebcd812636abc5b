// Launches the wgmma path's small kernels (wgmma_kernels.cuh): no CUTLASS in this unit.
#include <algorithm>

#include "gmm/wgmma/wgmma_kernels.cuh"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::wgmma {

void launch_setup(const SetupArgs& a, void* stream) {
  if (a.experts == 0) return;
  SetupArgs args = a;
  launch_kernel_args(reinterpret_cast<const void*>(&cuda::wgmma_setup_kernel), blocks_for(a.experts),
                     cuda::kWgmmaThreads, 0, stream, args);
  cuda_check(cudaGetLastError(), "gmm wgmma setup kernel launch");
}

void launch_silu(const SiluArgs& a, bool bf16, void* stream) {
  // The row count is on the device (offsets[E]): size the grid for every row the tensor has.
  const long long items = static_cast<long long>(a.rows) * (a.inter / 8);
  if (items == 0) return;
  auto* kern = bf16 ? &cuda::wgmma_silu_kernel<true> : &cuda::wgmma_silu_kernel<false>;
  SiluArgs args = a;
  launch_kernel_args(reinterpret_cast<const void*>(kern), blocks_for(items), cuda::kWgmmaThreads, 0, stream, args);
  cuda_check(cudaGetLastError(), "gmm wgmma silu*up kernel launch");
}

}  // namespace moe::gmm::wgmma
