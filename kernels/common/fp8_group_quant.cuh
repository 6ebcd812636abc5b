#pragma once
// The warp-level half of per-group quantization, shared by the fp8 kernels that write codes
// (dispatch's quantizing gather, gmm up's silu*up pass): eight lanes own one 128-wide group,
// 16 values each. Device code, compiled by nvcc or against the simt emulator's CUDA names.
#include <cstdint>

#include "common/e4m3.hpp"

namespace moe::fp8 {

namespace {

constexpr int kLanesPerGroup = 8;                    // 8 lanes x 16 values = one group
constexpr int kGroupsPerWarp = 32 / kLanesPerGroup;

// The amax of the group this lane's 16 values belong to. Every lane of the warp calls it; the
// groups are lane-aligned, so xor offsets below 8 stay inside each one.
__device__ __forceinline__ float group_amax16(const float (&v)[16]) {
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) amax = amax_step(amax, v[i]);
#pragma unroll
  for (int o = kLanesPerGroup / 2; o > 0; o /= 2) amax = amax_step(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  return amax;
}

// This lane's 16 codes under the group's scale, for one 16-byte store.
__device__ __forceinline__ uint4 codes16(const float (&v)[16], float scale) {
  uint4 out;
  out.x = pack4(v, scale);
  out.y = pack4(v + 4, scale);
  out.z = pack4(v + 8, scale);
  out.w = pack4(v + 12, scale);
  return out;
}

}  // namespace

}  // namespace moe::fp8
