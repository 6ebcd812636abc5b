#pragma once
// Host side of one kernel instantiation: its launch plan (shared-memory opt-in, occupancy, the
// persistent grid), made once per config; launching is cuda_backend.cpp's.
#include <cuda_runtime.h>

#include <algorithm>

#include "gmm/mma/cuda_kernel.cuh"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::cuda {

// ---- host planner of one instantiation (queries go through moe/cuda_launch_api.hpp, cached)

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool UP, bool BF16, bool FN = false>
PlannedLaunch plan_mma(const KernelArgs& a) {
  constexpr TileShape shape{BM, BN, BK, WARPS_M, WARPS_N, STAGES};
  const void* kern = reinterpret_cast<const void*>(&gmm_mma_kernel<BM, BN, BK, WARPS_M, WARPS_N, STAGES, UP, BF16, FN>);
  const std::size_t smem = smem_bytes(shape, a.experts);
  const KernelFacts f = kernel_facts(kern, shape.threads(), smem);
  if (f.blocks_per_sm < 1)
    throw Error("gmm: tile " + std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK) +
                " does not fit on an SM of this device (shared memory or registers): pick a smaller config");
  // A CTA per M-tile bound (every expert may end in a partial tile), capped at what runs at once.
  const long long m_bound = (a.rows + BM - 1) / BM + a.experts;
  long long grid = m_bound * a.n_tiles * a.split;
  grid = std::min<long long>(grid, static_cast<long long>(f.blocks_per_sm) * std::max(a.sm_count, 1));
  if (a.max_ctas > 0) grid = std::min<long long>(grid, a.max_ctas);
  PlannedLaunch p;
  p.func = kern;
  p.grid = static_cast<unsigned>(std::max<long long>(grid, 0));
  p.threads = static_cast<unsigned>(shape.threads());
  p.smem = smem;
  return p;
}

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool WITH_F16>
TileEntry tile_entry() {
  TileEntry t;
  t.shape = TileShape{BM, BN, BK, WARPS_M, WARPS_N, STAGES};
  t.up_bf16 = &plan_mma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, true>;
  t.down_bf16 = &plan_mma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, false, true>;
  if constexpr (WITH_F16) {
    t.up_f16 = &plan_mma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, false>;
    t.down_f16 = &plan_mma<BM, BN, BK, WARPS_M, WARPS_N, STAGES, false, false>;
  }
  return t;
}

}  // namespace moe::gmm::cuda
