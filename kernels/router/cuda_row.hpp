#pragma once
// The cuda router's per-row algorithm. It is written once against a small "Lane" interface
// (lane id, xor/indexed shuffles, full-warp max/min, warp barrier) so that the same code runs on the
// device (cuda_kernels.cuh) and, in the tests, on the host under a warp emulator: the
// index arithmetic, tie-breaking and NaN handling are checked on machines without a GPU.
//
// A row group of LANES lanes owns one row: lane `sub` holds experts
//   j*LANES*V + sub*V + v   (chunk j < EPL/V, v < V)
// as fp32 scores s[] and 32-bit order keys key[]. A key orders selection scores like the
// reference does: larger c first, NaN as -inf, and (through the index tie-break of every
// reduction) the lower expert first on ties. Key 0 marks an expert out of the running
// (padding, dropped group, already chosen).
//
// The parts, one file each: cuda_row_args.hpp (the kernel arguments), cuda_row_scalars.hpp,
// cuda_row_load.hpp (the row's logits and bias, and where each expert sits), cuda_row_reduce.hpp,
// cuda_row_groups.hpp (group selection), cuda_row_pairs.hpp and cuda_row_select.hpp (the top-k
// strategies and the weight store). This file routes a row through them.
#include "router/cuda_row_groups.hpp"
#include "router/cuda_row_load.hpp"
#include "router/cuda_row_select.hpp"

namespace moe::router::kern {

// ---- one row -------------------------------------------------------------------------------

template <int LANES, int EPL, int V, int ESIZE>
struct RowKernel : RowLayout<LANES, EPL, V, ESIZE> {
  using Layout = RowLayout<LANES, EPL, V, ESIZE>;
  using Groups = RowGroups<LANES, EPL, V, ESIZE>;
  using Select = RowSelect<LANES, EPL, V, ESIZE>;
  using Layout::expert_of;
  using Layout::load_row;
  using Layout::NCH;
  using Layout::RPW;
  using Layout::widen;
  using RawT = typename Layout::RawT;
  // Which top-k (select_sorted, select_writing or select_ranked): writing inside the loop pays
  // only for the packed wide rows, several rows per warp with 16+ experts per lane (E >= 256).
  static constexpr bool kWriteInLoop = LANES < 32 && EPL >= 16;
  // Of those, 8 lanes of 32 experts (DeepSeek-V3's shape) sort each lane's best 8 once, so a
  // pick compares 8 list heads instead of scanning 32 keys: 1,001 -> 805 warp-instructions a
  // row at DeepSeek-V3. The sort is a fixed cost, which a k of 1 or 2 does not repay.
  static constexpr bool kSortedLists = LANES == 8 && EPL % 8 == 0 && EPL >= 16;

  // Scores, groups, top-k and the writes of one row. `active` is false for a row group past
  // the last row: it computes on a copy of the last row (so the warp stays converged) and
  // writes nothing.
  template <class Lane>
  ROUTER_FN static void route(const Args& a, Lane& ln, int sub, long long row, bool active, const RawT (&raw)[NCH]) {
    float s[EPL], b[EPL];
    unsigned key[EPL];
    // Bias first: its loads then overlap the wait for the logits.
#pragma unroll
    for (int i = 0; i < EPL; ++i) b[i] = 0.0f;
    if (a.bias) {
#pragma unroll
      for (int j = 0; j < NCH; ++j) {
        const int e0 = expert_of(j * V, sub);
        if (e0 < a.E) load_bias<V>(b + j * V, a.bias + e0);
      }
    }
    // One uniform branch on the 16-bit format instead of a select per expert.
    if (ESIZE == 2 && a.bf16) widen(a, sub, raw, s, 1);
    else widen(a, sub, raw, s, 0);
    // Padding slots hold NaN logits: like NaN logits, no part of the row (and key 0 below).
    float m = neg_inf(), inv = 0.0f;  // softmax: the row max and 1/sum
    if (a.sigmoid) {
#pragma unroll
      for (int i = 0; i < EPL; ++i) s[i] = sigmoid_recip(1.0f + exp_f32(-s[i]));
    } else {
      // Softmax with the reference's non-finite rules, folded into the exp step: NaN logits get
      // 0 and stay out of the sum; with +inf logits, exp(min(x - m, 0)) turns their
      // inf - inf = NaN into exp(0) = 1 and every finite logit's -inf into 0 (for a finite max
      // the min changes nothing); a row whose max is -inf (all NaN or -inf) scores NaN.
#pragma unroll
      for (int i = 0; i < EPL; ++i) m = fmax_ignoring_nan(m, s[i]);
      m = row_max<LANES>(ln, m);
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        const float e = exp_f32(fmin_ignoring_nan(s[i] - m, 0.0f));
        // The same arithmetic spelled two ways for ptxas: with the select it fits the sorted
        // 8-lane rows in 128 registers (two CTAs per SM instead of one) but spills in the
        // fp32 rows of narrow loads, which the predicated add keeps spill-free.
        if constexpr (kSortedLists) {
          s[i] = is_nan(s[i]) ? 0.0f : e;
          sum += s[i];
        } else {
          if (!is_nan(s[i])) sum += e, s[i] = e;
          else s[i] = 0.0f;
        }
      }
      sum = row_sum<LANES>(ln, sum);
      inv = m == neg_inf() ? quiet_nan() : 1.0f / sum;
#pragma unroll
      for (int i = 0; i < EPL; ++i) s[i] = s[i] * inv;
    }
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const bool valid = expert_of(j * V, sub) < a.E;
#pragma unroll
      for (int v = 0; v < V; ++v) key[j * V + v] = valid ? order_key(s[j * V + v] + b[j * V + v]) : 0u;
    }

    if (a.group_mode == kLaneGroups) Groups::lane_groups(a, ln, sub, key);
    else if (a.group_mode == kAnyGroups) Groups::any_groups(a, ln, sub, key);

    if constexpr (kSortedLists) Select::select_sorted(a, ln, sub, row, active, key, m, inv);
    else if constexpr (kWriteInLoop) Select::select_writing(a, ln, sub, row, active, key, s);
    else Select::select_ranked(a, ln, sub, row, active, key, s);
    if (!active) return;
    const long long base = row * (a.k + a.S);
    for (int q = sub; q < a.S; q += LANES) {
      a.ids[base + a.k + q] = a.E + q;
      a.weights[base + a.k + q] = 1.0f;
    }
  }

  // Rows warp*RPW + (lane/LANES), stepping by nwarps*RPW; the next row's logits are loaded
  // while the current one is routed. Loop bounds depend on the warp only, never the lane.
  template <class Lane>
  ROUTER_FN static void rows(const Args& a, Lane& ln, long long warp, long long nwarps) {
    const int lane = ln.lane(), sub = lane % LANES;
    const long long rloc = lane / LANES, stride = nwarps * RPW, last = a.T - 1;
    RawT next[NCH];
    long long base = warp * RPW;
    if (base < a.T) load_row(a, min(base + rloc, last), sub, next);
    for (; base < a.T; base += stride) {
      RawT cur[NCH];
#pragma unroll
      for (int j = 0; j < NCH; ++j) cur[j] = next[j];
      if (base + stride < a.T) load_row(a, min(base + stride + rloc, last), sub, next);
      const long long row = base + rloc;
      route(a, ln, sub, min(row, last), row < a.T, cur);
    }
  }
};

}  // namespace moe::router::kern
