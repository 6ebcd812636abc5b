// The fp8 decode kernel's instantiations and their launch plans (shared-memory opt-in,
// occupancy, persistent grid), plus the two second passes it may need: split-K's finalize
// (cuda_kernel.cuh's, for down) and the silu*up+quant pass of an unfused up.
#include <cuda_runtime.h>

#include <algorithm>

#include "gmm/fp8_mma/fp8_mma_kernel.cuh"
#include "gmm/fp8_silu_quant_kernels.cuh"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::fp8_mma {

namespace {

constexpr int kSiluThreads = 256;

template <int BM, int BN, int WN, int ST, bool UP>
cuda::PlannedLaunch plan_one(const Args& a) {
  constexpr cuda::TileShape shape{BM, BN, kBlockK, 1, WN, ST};
  const void* kern = reinterpret_cast<const void*>(&cuda::gmm_fp8_mma_kernel<BM, BN, WN, ST, UP>);
  return cuda::plan_persistent(kern, shape, fp8_mma::smem_bytes(shape), a.b, "fp8 ");
}

struct Entry {
  cuda::TileShape shape;
  cuda::PlannedLaunch (*up)(const Args&), (*down)(const Args&);
};

template <int BM, int BN, int WN, int ST>
Entry entry() {
  return {cuda::TileShape{BM, BN, kBlockK, 1, WN, ST}, &plan_one<BM, BN, WN, ST, true>, &plan_one<BM, BN, WN, ST, false>};
}

// Keep in the order of tiles() (fp8_mma_backend.cpp) and the emulated list (fp8_mma_emu.cpp).
const Entry kEntries[] = {entry<16, 128, 4, 4>(), entry<16, 256, 8, 3>(), entry<32, 128, 4, 4>(), entry<32, 256, 8, 3>()};

const void* const kSiluQuant = reinterpret_cast<const void*>(&gmm::fp8_kernels::silu_quant_kernel<kSiluThreads>);
const void* const kSiluQuantSplit =
    reinterpret_cast<const void*>(&gmm::fp8_kernels::silu_quant_kernel<kSiluThreads, true>);

}  // namespace

cuda::PlannedLaunch plan_main(const cuda::TileShape& t, bool down, const Args& a) {
  for (const Entry& e : kEntries)
    if (e.shape == t) return down ? e.down(a) : e.up(a);
  throw Error("gmm: no fp8 mma kernel of this tile shape");
}

cuda::PlannedLaunch plan_silu_quant(const Args& a) {
  cuda::PlannedLaunch p;
  p.func = a.b.split > 1 ? kSiluQuantSplit : kSiluQuant;
  p.grid = static_cast<unsigned>(gmm::fp8_kernels::silu_quant_blocks(a.b.rows, a.b.n_out, kSiluThreads));
  p.threads = kSiluThreads;
  return p;
}

void launch(const cuda::PlannedLaunch& p, const Args& a, void* stream) {
  if (p.grid == 0) return;
  if (p.launch) return p.launch(p, a.b, stream);  // the schedule and split-K finalize kernels
  // Each kernel takes its own argument struct by value.
  if (p.func == kSiluQuant || p.func == kSiluQuantSplit) {
    gmm::fp8_kernels::SiluQuantArgs s{a.b.partial, a.h, a.h_scale, a.b.rows, a.b.n_out, a.b.offsets + a.b.experts, a.ue8m0,
                                      a.b.split, static_cast<long long>(a.b.rows) * a.b.n_w};
    return launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, s);
  }
  Args by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

}  // namespace moe::gmm::fp8_mma
