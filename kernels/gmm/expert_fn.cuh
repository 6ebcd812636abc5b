#pragma once
// The expert function's device pieces, for any gmm kernel's epilogue: the interleaved w13 row
// map, the bias reads, the activation (silu*up or gpt-oss's clamped SwiGLU), down's bias and
// routed weight, and the pass that flags padding rows. Compiled for CUDA over
// cuda_primitives.cuh, and as host code over emu_primitives.hpp (which includes the kernel
// headers, and so this one, in namespace moe::gmm::emulated).
//
// Interface (kept small and stable; ExpertFnArgs in expert_fn_args.hpp):
//   fn_gate_row(f, c)              w13 row of gate column c; its up row is fn_gate_row(f, c) + f.up_rows
//   fn_pad_row(f, r)               row r is padding: store zeros, skip the function
//   fn_up<BF16>(f, e, c, g, u)     h of column c of local expert e from the fp32 gate and up sums
//   fn_down<BF16>(f, e, c, y, rw)  y of column c from the fp32 sum: + bias2, then times rw
//   fn_row_expert(offsets, E, rows, r)  the local expert owning row r (for a pass without a tile map)
//   gmm_pad_rows_kernel<kPadRowsWarps>(PadRowsArgs)  one flag byte per activation row; the
//                                  host plans it with cuda::plan_pad_rows (mma/cuda_configs.hpp)
// Split-K: a kernel stores the raw sums and its finalize applies fn_up/fn_down once, to the
// summed partials, so the biases are added once.
#include <cstdint>

#include "common/cuda_pdl.cuh"
#include "gmm/expert_fn_args.hpp"
#ifndef GMM_EMULATED_PRIMITIVES
#include "gmm/cuda_primitives.cuh"
#define GMM_KERNEL_NAMESPACE cuda
#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

GMM_DEVICE int fn_gate_row(const ExpertFnArgs& f, int c) { return c + (c & f.il_mask); }

GMM_DEVICE bool fn_pad_row(const ExpertFnArgs& f, int r) {
  return f.pad_rows != nullptr && load_plain(f.pad_rows + r) != 0;
}

// The last expert whose segment starts at or before row r (r < offsets[E]): r's own, for sound
// offsets. Offsets are clamped into [0, rows] as the kernels read them.
GMM_DEVICE int fn_row_expert(const std::int32_t* offsets, int experts, int rows, int r) {
  int lo = 0, hi = experts;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (min(max(load_plain(offsets + mid), 0), rows) <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

template <bool BF16>
GMM_DEVICE float fn_bias(const ExpertFnArgs& f, int e, int i) {
  return to_f32<BF16>(load_plain(f.bias + (static_cast<std::size_t>(e) * static_cast<std::size_t>(f.bias_stride) +
                                           static_cast<std::size_t>(i))));
}

// The clamps are comparisons, not fminf/fmaxf, so that a NaN passes through them (fminf would
// return the limit).
GMM_DEVICE float fn_activate(const ExpertFnArgs& f, float g, float u) {
  if (!f.swiglu_oai) return g / (1.0f + exp_fast(-g)) * u;
  g = g > f.limit ? f.limit : g;
  u = u > f.limit ? f.limit : u < -f.limit ? -f.limit : u;
  return (u + 1.0f) * (g / (1.0f + exp_fast(-f.alpha * g)));
}

template <bool BF16>
GMM_DEVICE float fn_up(const ExpertFnArgs& f, int e, int c, float g, float u) {
  if (f.bias != nullptr) {
    const int gr = fn_gate_row(f, c);
    g += fn_bias<BF16>(f, e, gr);
    u += fn_bias<BF16>(f, e, gr + f.up_rows);
  }
  return fn_activate(f, g, u);
}

template <bool BF16>
GMM_DEVICE float fn_down(const ExpertFnArgs& f, int e, int c, float y, float rw) {
  if (f.bias != nullptr) y += fn_bias<BF16>(f, e, c);
  return y * rw;
}

// pad[r] = 1 when act row r is all (+-)zero. A warp ORs its row's 16-byte chunks, sign bits
// cleared, and an OR-scan leaves the row's OR in lane 31. Activations are a predecessor's output.
// A template (one instantiation, kPadRowsWarps) so that every unit including this may define it.
template <int WARPS>
GMM_KERNEL(WARPS * 32) gmm_pad_rows_kernel(const PadRowsArgs a) {
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const int lane_id = thread_x() & 31, warp_id = thread_x() >> 5, chunks = a.k_dim / 8;
  for (long long r = block_x() * WARPS + warp_id; r < a.rows; r += grid_x() * WARPS) {
    const std::uint16_t* row = a.act + static_cast<std::size_t>(r) * static_cast<std::size_t>(a.k_dim);
    unsigned bits = 0;
    for (int c = lane_id; c < chunks; c += 32) {
      const Vec8 v = load_vec8(row + c * 8);
#pragma unroll
      for (int q = 0; q < 8; ++q) bits |= v.v[q] & 0x7FFFu;
    }
    int any = bits != 0 ? 1 : 0;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) any |= shfl_up(any, d);
    if (lane_id == 31) a.pad[r] = any ? 0 : 1;
  }
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
