#pragma once
// The quantizing gather of fp8 dispatch (DESIGN.md 1.6): x [T,D] bf16 -> x_sorted [R,D] e4m3 +
// x_scale [R,D/128] f32, x read once and x_sorted and its scales written once. A warp takes
// four 128-column groups of a row; eight lanes share a group, each loading 16 bf16 (two 16-byte
// loads), reducing the group's amax over its eight lanes by shuffles and storing its 16 codes
// as one 16-byte store. Padding rows are zero rows quantized by the same rule.
// Device code only: tests/kernels/dispatch/dispatch_fp8_emulation_test.cpp runs it on the cpu
// under the simt emulator. It is not launched by the cuda backend yet (fp8 problems are refused
// there). Internal linkage: each includer gets its own copy.
#include <cstdint>

#include "common/fp8_group_quant.cuh"
#include "common/cuda_pdl.cuh"

namespace moe::dispatch_cuda::gather_fp8_kernels {

namespace {

using fp8::kGroupsPerWarp;
using fp8::kLanesPerGroup;

struct QDev {
  const std::uint16_t* x;  // [T, D] bf16 bits
  const int* src;          // [rows] slot of each row, -1 on padding
  std::uint8_t* xs;        // [rows, D] e4m3 codes
  float* scales;           // [rows, D/128]
  long long rows, slots;
  int K;
  long long D;
  const int* used;  // offsets[local], or null: every row is in use
  bool ue8m0;
};

__device__ __forceinline__ long long q_rows_in_use(const QDev& g) {
  if (!g.used) return g.rows;
  const long long u = *g.used;
  return u < 0 ? 0 : (u < g.rows ? u : g.rows);
}

__device__ __forceinline__ float bf16_bits_to_float(unsigned bits) { return fp8::f32_from(bits << 16); }

// One warp's part of row r: its 128-column groups chunk*4 .. chunk*4+3, from x's row of slot s
// (a padding row when s is not a slot: a zero row, quantized by the same rule). Every lane of
// the warp calls it (the amax is shuffled across each group's lanes).
__device__ __forceinline__ void quant_row_chunk(const QDev& g, long long r, long long chunk, int s) {
  const long long G = g.D / 128;
  const int lane = threadIdx.x % 32, sub = lane % kLanesPerGroup;
  const long long grp = chunk * kGroupsPerWarp + lane / kLanesPerGroup;
  const bool live = grp < G;  // D/128 not a multiple of 4: the warp's last lanes idle along
  const bool pad = s < 0 || s >= g.slots;
  float v[16];
  if (live && !pad) {
    const uint4* in = reinterpret_cast<const uint4*>(g.x + static_cast<long long>(s / g.K) * g.D + grp * 128 + sub * 16);
    const uint4 a = *(in), b = *(in + 1);
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      v[2 * i] = bf16_bits_to_float(w[i] & 0xFFFFu);
      v[2 * i + 1] = bf16_bits_to_float(w[i] >> 16);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = 0.0f;
  }
  const float amax = fp8::group_amax16(v);
  if (!live) return;
  const float scale = fp8::group_scale(amax, g.ue8m0);
  __stcs(reinterpret_cast<uint4*>(g.xs + r * g.D + grp * 128 + sub * 16), fp8::codes16(v, scale));
  if (sub == 0) g.scales[r * G + grp] = scale;
}

// A warp's 128-column groups of a row in one 32-lane call.
__host__ __device__ __forceinline__ long long quant_chunks(long long D) { return (D / 128 + kGroupsPerWarp - 1) / kGroupsPerWarp; }

template <int THREADS>
__global__ void __launch_bounds__(THREADS) quant_gather_kernel(QDev g) {
  const long long chunks = quant_chunks(g.D);
  const long long warp = (static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x) / 32;
  const long long r = warp / chunks;  // the same for the whole warp: its shuffles see every lane
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  if (r >= q_rows_in_use(g)) return;
  quant_row_chunk(g, r, warp % chunks, g.src[r]);
}

// Blocks a launch needs for `rows` rows.
inline long long quant_gather_blocks(long long rows, long long D, int threads) {
  const long long warps = rows * quant_chunks(D);
  return (warps * 32 + threads - 1) / threads;
}

}  // namespace

}  // namespace moe::dispatch_cuda::gather_fp8_kernels
