#pragma once
// fp8 gmm up's epilogue pass (DESIGN.md 1.6): gate|up rows in fp32 [R, 2I], as a block-scaled
// grouped GEMM of w13 writes them, -> h = silu(gate) * up in fp32, requantized per row and 128
// columns: h [R,I] e4m3 + h_scale [R,I/128], read once and written once. A warp takes four
// groups of a row; eight lanes share a group, each handling 16 columns (four 16-byte loads of
// gate and of up, one 16-byte store of codes), the group's amax reduced by shuffles.
// The fp8 decode kernel's unfused up may split K: then `split` slabs of partial gate|up rows,
// `split_stride` floats apart, are summed in split order (the result does not depend on which
// CTA finished first) before silu*up. Device code only: the cuda backend launches it after the
// wgmma GEMM and the decode kernel; tests/kernels/gmm/fp8_silu_quant_emulation_test.cpp runs it
// on the cpu under the simt emulator.
#include <cmath>
#include <cstdint>

#include "common/fp8_group_quant.cuh"
#include "common/cuda_pdl.cuh"

namespace moe::gmm::fp8_kernels {

namespace {

using fp8::kGroupsPerWarp;
using fp8::kLanesPerGroup;

struct SiluQuantArgs {
  const float* gu;   // [rows, 2I]: gate columns 0..I-1, up columns I..2I-1
  std::uint8_t* h;   // [rows, I] e4m3
  float* h_scale;    // [rows, I/128]
  long long rows;
  int I;
  const int* used;   // offsets[E]: rows past it belong to no expert and are left alone; null: all
  bool ue8m0;
  int split = 1;                // partial slabs to sum
  long long split_stride = 0;   // floats from one slab to the next
};

// SPLIT: sum p.split slabs first (an instantiation of its own: the sums hold twice the registers,
// which would cost the unsplit pass occupancy).
template <int THREADS, bool SPLIT = false>
__global__ void __launch_bounds__(THREADS) silu_quant_kernel(const SiluQuantArgs p) {
  const long long G = p.I / 128, chunks = (G + kGroupsPerWarp - 1) / kGroupsPerWarp;
  const long long warp = (static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32, sub = lane % kLanesPerGroup;
  const long long r = warp / chunks;  // one row per warp: its shuffles see every lane
  // gate|up and offsets[E] are the GEMM's and dispatch's outputs.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  long long in_use = p.rows;
  if (p.used) in_use = *p.used < 0 ? 0 : (*p.used < p.rows ? *p.used : p.rows);
  if (r >= in_use) return;
  const long long grp = (warp % chunks) * kGroupsPerWarp + lane / kLanesPerGroup;
  const bool live = grp < G;
  float h[16] = {};
  if (live) {
    const float* row = p.gu + r * 2 * p.I + grp * 128 + sub * 16;
    if constexpr (SPLIT) {
      float gs[16] = {}, us[16] = {};
#pragma unroll 1
      for (int sp = 0; sp < p.split; ++sp, row += p.split_stride) {
        const float4* g4 = reinterpret_cast<const float4*>(row);
        const float4* u4 = reinterpret_cast<const float4*>(row + p.I);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 g = *(g4 + i), u = *(u4 + i);
          gs[4 * i] += g.x, gs[4 * i + 1] += g.y, gs[4 * i + 2] += g.z, gs[4 * i + 3] += g.w;
          us[4 * i] += u.x, us[4 * i + 1] += u.y, us[4 * i + 2] += u.z, us[4 * i + 3] += u.w;
        }
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) h[j] = gs[j] / (1.0f + expf(-gs[j])) * us[j];
    } else {
      const float4* g4 = reinterpret_cast<const float4*>(row);
      const float4* u4 = reinterpret_cast<const float4*>(row + p.I);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 g = *(g4 + i), u = *(u4 + i);
        const float gs[4] = {g.x, g.y, g.z, g.w}, us[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) h[4 * i + j] = gs[j] / (1.0f + expf(-gs[j])) * us[j];
      }
    }
  }
  const float amax = fp8::group_amax16(h);
  if (!live) return;
  const float scale = fp8::group_scale(amax, p.ue8m0);
  *reinterpret_cast<uint4*>(p.h + r * p.I + grp * 128 + sub * 16) = fp8::codes16(h, scale);
  if (sub == 0) p.h_scale[r * G + grp] = scale;
}

inline long long silu_quant_blocks(long long rows, int I, int threads) {
  const long long warps = rows * ((I / 128 + kGroupsPerWarp - 1) / kGroupsPerWarp);
  return (warps * 32 + threads - 1) / threads;
}

}  // namespace

}  // namespace moe::gmm::fp8_kernels
