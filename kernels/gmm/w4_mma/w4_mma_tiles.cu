// The 4-bit decode kernel's instantiations (each shape: up and down, mxfp4 and int4) and their
// launch plans (shared-memory opt-in, occupancy, persistent grid). Split-K's finalize is the bf16
// kernel's (mma/cuda_finalize.cu), planned by the host half.
#include <cuda_runtime.h>

#include <algorithm>

#include "gmm/w4_mma/w4_mma_kernel.cuh"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::w4_mma {

namespace {

template <int BM, int BN, int BK, int WN, int ST, bool UP, bool MX>
cuda::PlannedLaunch plan_one(const Args& a) {
  constexpr cuda::TileShape shape{BM, BN, BK, 1, WN, ST};
  const void* kern = reinterpret_cast<const void*>(&cuda::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, UP, MX>);
  const std::size_t smem = w4_mma::smem_bytes(shape);
  const KernelFacts f = kernel_facts(kern, shape.threads(), smem);
  if (f.blocks_per_sm < 1)
    throw Error("gmm: 4-bit tile " + std::to_string(BM) + "x" + std::to_string(BN) +
                " does not fit on an SM of this device: pick a smaller config");
  long long grid = ((a.b.rows + BM - 1) / BM + a.b.experts) * static_cast<long long>(a.b.n_tiles) * a.b.split;
  grid = std::min<long long>(grid, static_cast<long long>(f.blocks_per_sm) * std::max(a.b.sm_count, 1));
  cuda::PlannedLaunch p;
  p.func = kern;
  p.grid = static_cast<unsigned>(std::max<long long>(grid, 0));
  p.threads = static_cast<unsigned>(shape.threads());
  p.smem = smem;
  return p;
}

struct Entry {
  cuda::TileShape shape;
  cuda::PlannedLaunch (*plan[2][2])(const Args&);  // [down][mxfp4]
};

template <int BM, int BN, int BK, int WN, int ST>
Entry entry() {
  return {cuda::TileShape{BM, BN, BK, 1, WN, ST},
          {{&plan_one<BM, BN, BK, WN, ST, true, false>, &plan_one<BM, BN, BK, WN, ST, true, true>},
           {&plan_one<BM, BN, BK, WN, ST, false, false>, &plan_one<BM, BN, BK, WN, ST, false, true>}}};
}

// Keep in the order of tiles() (w4_mma_backend.cpp) and the emulated list (w4_mma_emu.cpp).
const Entry kEntries[] = {entry<16, 128, 128, 4, 4>(), entry<16, 128, 64, 4, 4>(), entry<16, 64, 32, 4, 4>(),
                          entry<32, 128, 64, 4, 4>()};

}  // namespace

cuda::PlannedLaunch plan_main(const cuda::TileShape& t, bool down, bool mxfp4, const Args& a) {
  for (const Entry& e : kEntries)
    if (e.shape == t) return e.plan[down ? 1 : 0][mxfp4 ? 1 : 0](a);
  throw Error("gmm: no 4-bit mma kernel of this tile shape");
}

void launch(const cuda::PlannedLaunch& p, const Args& a, void* stream) {
  if (p.grid == 0) return;
  if (p.launch) return p.launch(p, a.b, stream);  // the schedule and split-K finalize kernels
  Args by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

}  // namespace moe::gmm::w4_mma
