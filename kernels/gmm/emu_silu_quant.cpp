// fp8 gmm up's silu*up + requantization kernel (fp8_silu_quant_kernels.cuh) for the emu
// backend's wgmma path, launched as wgmma_fp8_epilogue.cu launches it on a GPU. Its own unit:
// the kernel compiles against the emulator's CUDA names, the other gmm kernels against
// emu_primitives.hpp.
#include "emu/simt_cuda.hpp"  // first: the kernel header compiles against its CUDA names

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/fp8_silu_quant_kernels.cuh"
#include "gmm/wgmma/wgmma_configs.hpp"

namespace moe::gmm::emu {

void run_silu_quant(const wgmma::SiluQuantLaunch& a) {
  constexpr int kThreads = 256;  // as on the GPU
  const long long blocks = fp8_kernels::silu_quant_blocks(a.rows, a.inter, kThreads);
  if (blocks == 0) return;
  const fp8_kernels::SiluQuantArgs args{a.gu, a.h, a.h_scale, a.rows, a.inter, a.offsets + a.experts, a.ue8m0};
  emu_launch("silu_quant_kernel", blocks, kThreads, 0, [&] { fp8_kernels::silu_quant_kernel<kThreads>(args); }, 7);
}

}  // namespace moe::gmm::emu
