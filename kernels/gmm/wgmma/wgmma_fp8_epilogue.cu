// fp8 gmm up on the wgmma path: the silu*up + requantization pass
// (fp8_silu_quant_kernels.cuh) over the fp32 gate|up rows the blockwise-scaled GEMM wrote.
#include <cuda_runtime.h>

#include "gmm/fp8_silu_quant_kernels.cuh"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"

namespace moe::gmm::wgmma {

namespace {
constexpr int kSiluQuantThreads = 256;
}

void launch_silu_quant(const SiluQuantLaunch& a, void* stream) {
  // The row count is on the device (offsets[E]): the grid covers every row the tensor has,
  // and the kernel leaves the rows past offsets[E] alone.
  const long long blocks = fp8_kernels::silu_quant_blocks(a.rows, a.inter, kSiluQuantThreads);
  if (blocks == 0) return;
  fp8_kernels::SiluQuantArgs args{a.gu, a.h, a.h_scale, a.rows, a.inter, a.offsets + a.experts, a.ue8m0};
  launch_kernel_args(reinterpret_cast<const void*>(&fp8_kernels::silu_quant_kernel<kSiluQuantThreads>),
                     static_cast<unsigned>(blocks), kSiluQuantThreads, 0, stream, args);
  cuda_check(cudaGetLastError(), "gmm wgmma fp8 silu*up+quant kernel launch");
}

}  // namespace moe::gmm::wgmma
