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
  return plan_persistent(kern, shape, smem_bytes(shape, a.experts), a, "");
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
