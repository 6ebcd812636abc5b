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
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define ROUTER_FN __device__ __forceinline__
#else
#include <cmath>

#include "moe/dtype.hpp"
#define ROUTER_FN inline
#endif

namespace moe::router::kern {

enum GroupMode : int {
  kNoGroups = 0,    // every expert is a candidate (G == 1 or TG == G)
  kLaneGroups = 1,  // each chunk of a lane lies inside one group, groups span lpg aligned lanes
  kAnyGroups = 2,   // anything else: groups scored one at a time
};

// Kernel arguments, passed by value. Built on the host by make_kernel_args (cuda.hpp).
struct Args {
  const void* logits;  // [T,E], esize bytes per element
  const float* bias;   // [E] or null
  float* weights;      // [T,K]
  std::int32_t* ids;   // [T,K]
  long long T;
  int E, k, S;
  int G, TG, GS;       // groups, kept groups, experts per group
  int group_mode;
  int lpg_shift;       // kLaneGroups: log2(lanes per group)
  int gpc;             // kLaneGroups: groups per chunk (LANES*V/GS)
  int sigmoid, top2, renorm, bf16;
  float rsf;
};

#if !defined(__CUDACC__)
using std::max;
using std::min;
#endif

// ---- scalar helpers ---------------------------------------------------------------------

ROUTER_FN float u2f(unsigned u) {
#if defined(__CUDACC__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

ROUTER_FN unsigned f2u(float f) {
#if defined(__CUDACC__)
  return __float_as_uint(f);
#else
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ROUTER_FN bool is_nan(float x) { return x != x; }
ROUTER_FN float neg_inf() { return u2f(0xFF800000u); }
ROUTER_FN float quiet_nan() { return u2f(0x7FC00000u); }
// IEEE fmax: a NaN operand is ignored.
ROUTER_FN float fmax_ignoring_nan(float a, float b) { return (is_nan(b) || a >= b) ? a : b; }
// IEEE fmin (one FMNMX on the device): a NaN operand is ignored.
ROUTER_FN float fmin_ignoring_nan(float a, float b) {
#if defined(__CUDACC__)
  return fminf(a, b);
#else
  return std::fmin(a, b);
#endif
}

ROUTER_FN float exp_f32(float x) {
#if defined(__CUDACC__)
  return expf(x);
#else
  return std::exp(x);
#endif
}

// 1/x for the sigmoid's x = 1 + exp(-logit) >= 1. The device takes the fast reciprocal
// (within 2 ulp; 0 past 2^126, where the sigmoid is below 1e-38 anyway): the IEEE division's
// range check and slow-path branch per expert were a tenth of a row's instructions.
ROUTER_FN float sigmoid_recip(float x) {
#if defined(__CUDACC__)
  return __fdividef(1.0f, x);
#else
  return 1.0f / x;
#endif
}

ROUTER_FN float half_to_float(unsigned h) {
#if defined(__CUDACC__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  return moe::f16_to_float(static_cast<std::uint16_t>(h));
#endif
}

// Order-preserving map of a selection score to an unsigned key: NaN ranks as -inf and
// -0 as +0 (they compare equal as floats, so they must tie). Every real key is >= kMinKey.
inline constexpr unsigned kMinKey = 0x007FFFFFu;  // the key of -inf
ROUTER_FN unsigned order_key(float c) {
  // c + 0 turns -0 into +0 (round to nearest) and keeps every other value; then negative
  // floats flip all bits, positive ones only the sign bit.
  const unsigned u = f2u(is_nan(c) ? neg_inf() : c + 0.0f);
  return u ^ (static_cast<unsigned>(static_cast<int>(u) >> 31) | 0x80000000u);
}
ROUTER_FN float key_value(unsigned k) { return u2f((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k); }

// ---- loads --------------------------------------------------------------------------------

template <int BYTES>
struct Raw {
  unsigned w[BYTES / 4];
};
template <>
struct Raw<2> {
  unsigned short h;
};

template <int BYTES>
ROUTER_FN void load_raw(Raw<BYTES>& r, const unsigned char* p) {
#if defined(__CUDACC__)
  if constexpr (BYTES == 16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
  } else if constexpr (BYTES == 8) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    r.w[0] = v.x, r.w[1] = v.y;
  } else if constexpr (BYTES == 4) {
    r.w[0] = __ldg(reinterpret_cast<const unsigned*>(p));
  } else {
    r.h = __ldg(reinterpret_cast<const unsigned short*>(p));
  }
#else
  std::memcpy(&r, p, BYTES);
#endif
}

// Element v of a raw vector, widened to float (bf16/f16 convert exactly).
template <int ESIZE, int BYTES>
ROUTER_FN float raw_elem(const Raw<BYTES>& r, int v, int bf16) {
  if constexpr (ESIZE == 4) {
    return u2f(r.w[v]);
  } else {
    unsigned h;
    if constexpr (BYTES == 2) h = r.h;
    else h = (r.w[v >> 1] >> ((v & 1) * 16)) & 0xFFFFu;  // little endian: lower address, low half
    return bf16 ? u2f(h << 16) : half_to_float(h);
  }
}

// V consecutive biases from a V-aligned index (16-byte aligned for V >= 4).
template <int V>
ROUTER_FN void load_bias(float* b, const float* p) {
#if defined(__CUDACC__)
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(p) + q);
      b[4 * q] = x.x, b[4 * q + 1] = x.y, b[4 * q + 2] = x.z, b[4 * q + 3] = x.w;
    }
  } else if constexpr (V == 2) {
    const float2 x = __ldg(reinterpret_cast<const float2*>(p));
    b[0] = x.x, b[1] = x.y;
  } else {
    b[0] = __ldg(p);
  }
#else
  for (int i = 0; i < V; ++i) b[i] = p[i];
#endif
}

// ---- reductions over the LANES lanes of a row group ----------------------------------------
// xor butterflies leave the same result on every lane of the group (the combine steps are
// commutative), which keeps all later decisions uniform across the group.

template <int LANES, class Lane>
ROUTER_FN float row_sum(Lane& ln, float v) {
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) v += ln.xor_f(v, off);
  return v;
}

template <int LANES, class Lane>
ROUTER_FN float row_max(Lane& ln, float v) {
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) v = fmax_ignoring_nan(v, ln.xor_f(v, off));
  return v;
}

// The largest key with, among equal keys, the smallest idx; every lane of the group gets it.
template <int LANES, class Lane>
ROUTER_FN void row_argmax(Lane& ln, unsigned& key, unsigned& idx) {
  if constexpr (LANES == 32) {
    const unsigned m = ln.max_u(key);
    idx = ln.min_u(key == m ? idx : 0xFFFFFFFFu);
    key = m;
  } else {
#pragma unroll
    for (int off = LANES / 2; off > 0; off >>= 1) {
      const unsigned ok = ln.xor_u(key, off), oi = ln.xor_u(idx, off);
      if (ok > key || (ok == key && oi < idx)) key = ok, idx = oi;
    }
  }
}

ROUTER_FN void top2_insert(unsigned& t1, unsigned& t2, unsigned x) {
  t2 = max(t2, min(t1, x));
  t1 = max(t1, x);
}

// Best two of x[LO, LO+N) as a tournament: 17 min/max for 8 keys where inserting one at a
// time takes 24. N: a power of two.
template <int LO, int N, int M>
ROUTER_FN void top2_of(const unsigned (&x)[M], unsigned& t1, unsigned& t2) {
  if constexpr (N == 1) {
    t1 = x[LO], t2 = 0;
  } else {
    unsigned a1, a2, b1, b2;
    top2_of<LO, N / 2>(x, a1, a2);
    top2_of<LO + N / 2, N / 2>(x, b1, b2);
    t1 = max(a1, b1);
    t2 = max(min(a1, b1), max(a2, b2));
  }
}

// Merges the best two keys across `span` aligned lanes (span: a power of two <= LANES). The
// steps are unrolled to LANES and skipped past span (uniform), so no loop counter is kept.
template <int LANES, class Lane>
ROUTER_FN void span_top2(Lane& ln, unsigned& t1, unsigned& t2, int span) {
#pragma unroll
  for (int off = 1; off < LANES; off <<= 1) {
    if (off >= span) break;
    const unsigned o1 = ln.xor_u(t1, off), o2 = ln.xor_u(t2, off);
    t2 = max(min(t1, o1), max(t2, o2));
    t1 = max(t1, o1);
  }
}

// Best key of a lane's array and its slot; ties to the lower slot (a tree, for latency: the
// left half always holds the lower slots, and only a strictly larger right side wins).
// `taken` bit i drops key i from the running: bits, not stores into the array, because a
// store at a computed index would put the array in local memory.
template <int N>
ROUTER_FN void local_argmax(const unsigned (&key)[N], unsigned taken, unsigned& best, int& slot) {
  unsigned k[N];
  int s[N];
#pragma unroll
  for (int i = 0; i < N; ++i) k[i] = ((taken >> i) & 1u) ? 0u : key[i], s[i] = i;
#pragma unroll
  for (int w = 1; w < N; w *= 2) {
#pragma unroll
    for (int i = 0; i + w < N; i += 2 * w)
      if (k[i + w] > k[i]) k[i] = k[i + w], s[i] = s[i + w];
  }
  best = k[0];
  slot = s[0];
}

// local_argmax that also carries the winner's score, so that it never has to be read back
// from the array at a computed index.
template <int N>
ROUTER_FN void local_best(const unsigned (&key)[N], const float (&score)[N], unsigned& best, int& slot, float& sc) {
  unsigned k[N];
  int s[N];
  float v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) k[i] = key[i], s[i] = i, v[i] = score[i];
#pragma unroll
  for (int w = 1; w < N; w *= 2) {
#pragma unroll
    for (int i = 0; i + w < N; i += 2 * w)
      if (k[i + w] > k[i]) k[i] = k[i + w], s[i] = s[i + w], v[i] = v[i + w];
  }
  best = k[0];
  slot = s[0];
  sc = v[0];
}

// Score of a group from its best two keys: fp32 sum for top2_sum (one expert: its own c).
ROUTER_FN float group_value(const Args& a, unsigned t1, unsigned t2) {
  float v = key_value(t1);
  if (a.top2 && a.GS > 1) v = v + key_value(t2);
  return v;
}

// ---- sorted lists of (key, expert) pairs -------------------------------------------------
// A pair packs a key and the complement of its expert index into 64 bits, so one unsigned
// compare orders experts exactly as the reference does: larger key first, then lower index.
// Keys and indices stay exact (ties are decided by the index, never by a rounding).
using Pair = unsigned long long;
ROUTER_FN Pair make_pair(unsigned key, unsigned expert) { return (static_cast<Pair>(key) << 32) | ~expert; }
ROUTER_FN unsigned pair_key(Pair p) { return static_cast<unsigned>(p >> 32); }
ROUTER_FN unsigned pair_expert(Pair p) { return ~static_cast<unsigned>(p); }

// a before b afterwards. The loser comes from an xor, not a second select: written as a
// select, the compiler computes max and min with a compare each.
ROUTER_FN void order_pair(Pair& a, Pair& b) {
  const Pair hi = b > a ? b : a;
  b = a ^ b ^ hi;
  a = hi;
}

// Sorts 8 pairs, best first: the 19-comparator network of depth 6.
ROUTER_FN void sort8(Pair (&x)[8]) {
  constexpr int net[19][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
                              {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};
#pragma unroll
  for (int c = 0; c < 19; ++c) order_pair(x[net[c][0]], x[net[c][1]]);
}

// best = the 8 best of two sorted lists, sorted: the pairwise maxima of best and reversed x form
// a bitonic sequence holding them, which three half-cleaner stages sort.
ROUTER_FN void merge_best8(Pair (&best)[8], const Pair (&x)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) best[i] = x[7 - i] > best[i] ? x[7 - i] : best[i];
#pragma unroll
  for (int d = 4; d > 0; d >>= 1)
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if ((i & d) == 0) order_pair(best[i], best[i + d]);
}

// The best pair of the row group, on every lane of it.
template <int LANES, class Lane>
ROUTER_FN Pair row_best_pair(Lane& ln, Pair p) {
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) {
    const Pair o = (static_cast<Pair>(ln.xor_u(pair_key(p), off)) << 32) | ln.xor_u(static_cast<unsigned>(p), off);
    p = o > p ? o : p;
  }
  return p;
}

// ---- one row -------------------------------------------------------------------------------

template <int LANES, int EPL, int V, int ESIZE>
struct RowKernel {
  static_assert(LANES >= 1 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "lanes: a power of two up to 32");
  static_assert(V == 1 || V == 2 || V == 4 || V == 8, "vec: 1, 2, 4 or 8 elements");
  static_assert(EPL % V == 0 && EPL <= 32, "epl: a multiple of vec, at most 32 (one bit per slot)");
  static_assert(V * ESIZE <= 16, "loads are at most 16 bytes");
  static constexpr int NCH = EPL / V;
  static constexpr int RPW = 32 / LANES;
  static constexpr int BYTES = V * ESIZE;
  // Ranks whose scores each lane keeps in registers: the first 32 ranks (all of them when a
  // lane holds the whole row).
  static constexpr int HELD = EPL < 32 / LANES ? EPL : 32 / LANES;
  // Which top-k (select_sorted, select_writing or select_ranked): writing inside the loop pays
  // only for the packed wide rows, several rows per warp with 16+ experts per lane (E >= 256).
  static constexpr bool kWriteInLoop = LANES < 32 && EPL >= 16;
  // Of those, 8 lanes of 32 experts (DeepSeek-V3's shape) sort each lane's best 8 once, so a
  // pick compares 8 list heads instead of scanning 32 keys: 1,001 -> 805 warp-instructions a
  // row at DeepSeek-V3. The sort is a fixed cost, which a k of 1 or 2 does not repay.
  static constexpr bool kSortedLists = LANES == 8 && EPL % 8 == 0 && EPL >= 16;
  using RawT = Raw<BYTES>;

  ROUTER_FN static int expert_of(int slot, int sub) { return (slot / V) * (LANES * V) + sub * V + slot % V; }

  ROUTER_FN static void load_row(const Args& a, long long row, int sub, RawT (&raw)[NCH]) {
    const auto* base = static_cast<const unsigned char*>(a.logits) + row * a.E * ESIZE;
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const int e = expert_of(j * V, sub);
      if (e < a.E) load_raw<BYTES>(raw[j], base + static_cast<long long>(e) * ESIZE);
      else raw[j] = RawT{};
    }
  }

  // Groups whose chunks sit inside one group: score each chunk's group across its lpg lanes,
  // keep the TG best (ties to the lower group), drop the rest.
  template <class Lane>
  ROUTER_FN static void lane_groups(const Args& a, Lane& ln, int sub, unsigned (&key)[EPL]) {
    const int lpg = 1 << a.lpg_shift, gsub = sub >> a.lpg_shift;
    unsigned gk[NCH];
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      unsigned c[V], t1, t2;
#pragma unroll
      for (int v = 0; v < V; ++v) c[v] = key[j * V + v];
      top2_of<0, V>(c, t1, t2);
      span_top2<LANES>(ln, t1, t2, lpg);
      const int gid = j * a.gpc + gsub;
      gk[j] = gid < a.G ? order_key(group_value(a, t1, t2)) : 0u;
    }
    unsigned kept = 0;  // bit j: chunk j's group is kept
    for (int r = 0; r < a.TG; ++r) {
      unsigned bk;
      int bj;
      local_argmax<NCH>(gk, kept, bk, bj);
      unsigned bg = static_cast<unsigned>(bj * a.gpc + gsub);
      row_argmax<LANES>(ln, bk, bg);
#pragma unroll
      for (int j = 0; j < NCH; ++j)
        if (static_cast<unsigned>(j * a.gpc + gsub) == bg) kept |= 1u << j;
    }
#pragma unroll
    for (int j = 0; j < NCH; ++j)
      if (!((kept >> j) & 1u))
#pragma unroll
        for (int v = 0; v < V; ++v) key[j * V + v] = 0;
  }

  // Any grouping: score group g across the whole row group, park its key on lane g % LANES
  // (slot g / LANES), select TG groups there, then each expert asks its group's lane. The
  // parking slot is picked by a bit mask, never by indexing gk: that would move gk to local
  // memory.
  template <class Lane>
  ROUTER_FN static void any_groups(const Args& a, Lane& ln, int sub, unsigned (&key)[EPL]) {
    unsigned gk[EPL];  // G <= E <= LANES*EPL, so EPL slots per lane hold every group
#pragma unroll
    for (int q = 0; q < EPL; ++q) gk[q] = 0;
    for (int g = 0; g < a.G; ++g) {
      unsigned t1 = 0, t2 = 0;
      // Group membership as a range test on the expert index, not a per-expert group array:
      // that array stayed live through the whole kernel and cost every preset registers
      // (an occupancy step on several shapes), though no preset takes this path.
      const int off = expert_of(0, sub) - g * a.GS;
#pragma unroll
      for (int i = 0; i < EPL; ++i)
        if (static_cast<unsigned>(off + expert_of(i, 0)) < static_cast<unsigned>(a.GS))
          top2_insert(t1, t2, key[i]);
      span_top2<LANES>(ln, t1, t2, LANES);
      const unsigned gkey = order_key(group_value(a, t1, t2));
      const unsigned park = sub == g % LANES ? 1u << (g / LANES) : 0u;
#pragma unroll
      for (int q = 0; q < EPL; ++q) gk[q] = ((park >> q) & 1u) ? gkey : gk[q];
    }
    unsigned kept = 0;  // bit q: group q*LANES + sub is kept
    for (int r = 0; r < a.TG; ++r) {
      unsigned bk;
      int bq;
      local_argmax<EPL>(gk, kept, bk, bq);
      unsigned bg = static_cast<unsigned>(bq * LANES + sub);
      row_argmax<LANES>(ln, bk, bg);
      if (static_cast<unsigned>(sub) == bg % LANES) kept |= 1u << (bg / LANES);
    }
#pragma unroll
    for (int i = 0; i < EPL; ++i) {
      const int g = expert_of(i, sub) / a.GS;
      const unsigned m = ln.idx_u(kept, g % LANES, LANES);
      const int bit = g / LANES;
      if (bit >= 32 || !((m >> bit) & 1u)) key[i] = 0;
    }
  }

  // The logits as floats; padding slots get NaN.
  ROUTER_FN static void widen(const Args& a, int sub, const RawT (&raw)[NCH], float (&s)[EPL], int bf16) {
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const bool valid = expert_of(j * V, sub) < a.E;
#pragma unroll
      for (int v = 0; v < V; ++v) s[j * V + v] = valid ? raw_elem<ESIZE, BYTES>(raw[j], v, bf16) : quiet_nan();
    }
  }

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

    if (a.group_mode == kLaneGroups) lane_groups(a, ln, sub, key);
    else if (a.group_mode == kAnyGroups) any_groups(a, ln, sub, key);

    if constexpr (kSortedLists) select_sorted(a, ln, sub, row, active, key, m, inv);
    else if constexpr (kWriteInLoop) select_writing(a, ln, sub, row, active, key, s);
    else select_ranked(a, ln, sub, row, active, key, s);
    if (!active) return;
    const long long base = row * (a.k + a.S);
    for (int q = sub; q < a.S; q += LANES) {
      a.ids[base + a.k + q] = a.E + q;
      a.weights[base + a.k + q] = 1.0f;
    }
  }

  // Top-k for rows of up to 8 experts per lane (or a whole warp per row): the chosen keys
  // become their rank + 1, and the ids and weights are written from the array after the loop.
  // Cheaper here than carrying the score through every step of the loop, and fewer registers.
  template <class Lane>
  ROUTER_FN static void select_ranked(const Args& a, Lane& ln, int sub, long long row, bool active,
                                      unsigned (&key)[EPL], const float (&s)[EPL]) {
    for (int it = 0; it < a.k; ++it) {
      unsigned bk;
      int bs;
      local_argmax<EPL>(key, 0u, bk, bs);
      const unsigned mine = static_cast<unsigned>(expert_of(bs, sub));
      unsigned win = mine;
      row_argmax<LANES>(ln, bk, win);
#pragma unroll
      for (int i = 0; i < EPL; ++i)
        if (win == mine && i == bs) key[i] = static_cast<unsigned>(it + 1);
    }
    const unsigned k = static_cast<unsigned>(a.k);
    float wsum = 0.0f;
#pragma unroll
    for (int i = 0; i < EPL; ++i)
      if (key[i] - 1u < k && !is_nan(s[i])) wsum += s[i];
    wsum = row_sum<LANES>(ln, wsum);
    const float scale = (a.renorm && wsum > 0.0f) ? a.rsf / wsum : a.rsf;
    if (!active) return;
    const long long base = row * (a.k + a.S);
#pragma unroll
    for (int i = 0; i < EPL; ++i) {
      if (key[i] - 1u < k) {
        const long long at = base + (key[i] - 1u);
        a.ids[at] = expert_of(i, sub);
        a.weights[at] = is_nan(s[i]) ? 0.0f : s[i] * scale;
      }
    }
  }

  // The end of select_writing and select_sorted: every lane holds the row's weight sum `wsum`;
  // lane r % LANES holds rank r's weight in held[r / LANES] (r < HELD*LANES), and later ranks
  // were written unscaled. Scales all k by rsf (and 1/wsum when renormalising) and stores them.
  template <class Lane>
  ROUTER_FN static void store_held_weights(const Args& a, Lane& ln, int sub, long long base, bool active,
                                           const float (&held)[HELD], float wsum) {
    const unsigned k = static_cast<unsigned>(a.k);
    const float scale = (a.renorm && wsum > 0.0f) ? a.rsf / wsum : a.rsf;
    if (k > HELD * LANES) ln.sync();  // the unscaled weights above, before they are read back
    if (!active) return;
#pragma unroll
    for (int j = 0; j < HELD; ++j) {
      const unsigned r = static_cast<unsigned>(j * LANES + sub);
      if (r < k) a.weights[base + r] = held[j] * scale;
    }
    for (unsigned r = HELD * LANES + sub; r < k; r += LANES) a.weights[base + r] *= scale;
  }

  // Top-k for packed wide rows. The winning lane writes the id at once; every lane of the group
  // gets the winner's score, and lane r % LANES keeps the score of rank r (for r < HELD*LANES)
  // until the renormalised scale is known. Later ranks are written unscaled and fixed after.
  // With 16+ experts per lane, the pass over the array after the loop cost more than the
  // score carried through each step.
  template <class Lane>
  ROUTER_FN static void select_writing(const Args& a, Lane& ln, int sub, long long row, bool active,
                                       unsigned (&key)[EPL], const float (&s)[EPL]) {
    const unsigned k = static_cast<unsigned>(a.k);
    const long long base = row * (a.k + a.S);
    float held[HELD];
#pragma unroll
    for (int j = 0; j < HELD; ++j) held[j] = 0.0f;
    float wsum = 0.0f;
    unsigned taken = 0;  // bit i: slot i already chosen
    for (unsigned it = 0; it < k; ++it) {
      unsigned bk;
      int bs;
      float bsc;
      local_best<EPL>(key, s, bk, bs, bsc);
      const unsigned mine = static_cast<unsigned>(expert_of(bs, sub));
      unsigned win = mine;
      row_argmax<LANES>(ln, bk, win);
      const bool won = win == mine;
      if (won) taken |= 1u << bs;
#pragma unroll
      for (int i = 0; i < EPL; ++i) key[i] = ((taken >> i) & 1u) ? 0u : key[i];
      float w = u2f(ln.idx_u(f2u(bsc), static_cast<int>((win / V) % LANES), LANES));
      w = is_nan(w) ? 0.0f : w;
      wsum += w;
      const unsigned hold = (it < HELD * LANES && it % LANES == static_cast<unsigned>(sub)) ? 1u << (it / LANES) : 0u;
#pragma unroll
      for (int j = 0; j < HELD; ++j) held[j] = ((hold >> j) & 1u) ? w : held[j];
      if (active && won) {
        a.ids[base + it] = static_cast<std::int32_t>(win);
        if (it >= HELD * LANES) a.weights[base + it] = w;
      }
    }
    store_held_weights(a, ln, sub, base, active, held, wsum);
  }

  // The score of expert e of the row, recomputed from its logit exactly as route() computes it
  // (m, inv: the softmax's row max and 1/sum).
  ROUTER_FN static float score_of(const Args& a, long long row, unsigned e, float m, float inv) {
    Raw<ESIZE> r;
    load_raw<ESIZE>(r, static_cast<const unsigned char*>(a.logits) + (row * a.E + e) * ESIZE);
    const float x = raw_elem<ESIZE, ESIZE>(r, 0, a.bf16);
    float s;
    if (a.sigmoid) {
      s = sigmoid_recip(1.0f + exp_f32(-x));
    } else {
      s = (is_nan(x) ? 0.0f : exp_f32(fmin_ignoring_nan(x - m, 0.0f))) * inv;
    }
    return s;
  }

  // Top-k from sorted lists. In rounds of LANES picks: each lane sorts the best LANES of its
  // pairs that rank after the last pick (sort8 per 8 slots, merged), then each pick is the best
  // head across the group, and the lane that owns it pops its list. A round never empties a
  // list, so no lane has to look at its array again until the next round. The winning lane
  // writes the id; lane r % LANES recomputes the score of rank r from its logit (cheaper than
  // carrying scores through the sorts), and keeps it for the renormalisation, as in
  // select_writing.
  template <class Lane>
  ROUTER_FN static void select_sorted(const Args& a, Lane& ln, int sub, long long row, bool active,
                                      const unsigned (&key)[EPL], float m, float inv) {
    static_assert(LANES == 8, "lists of LANES pairs, sorted 8 at a time");
    const unsigned k = static_cast<unsigned>(a.k);
    const long long base = row * (a.k + a.S);
    float held[HELD];
#pragma unroll
    for (int j = 0; j < HELD; ++j) held[j] = 0.0f;
    float wsum = 0.0f;
    Pair last = ~Pair{0};  // the round's pairs rank after this one, the previous round's last pick
    for (unsigned r0 = 0; r0 < k; r0 += LANES) {
      Pair list[8];
#pragma unroll
      for (int b = 0; b < EPL / 8; ++b) {
        Pair x[8];
#pragma unroll
        for (int v = 0; v < 8; ++v) {
          const Pair p = make_pair(key[b * 8 + v], static_cast<unsigned>(expert_of(b * 8 + v, sub)));
          x[v] = p < last ? p : static_cast<unsigned>(p);  // picked already: key 0, out of the running
        }
        sort8(x);
        if (b == 0) {
#pragma unroll
          for (int i = 0; i < 8; ++i) list[i] = x[i];
        } else {
          merge_best8(list, x);
        }
      }
      unsigned mine = 0;  // the expert of rank r0 + sub
#pragma unroll
      for (int q = 0; q < LANES; ++q) {
        const Pair win = row_best_pair<LANES>(ln, list[0]);
        const bool won = static_cast<unsigned>(win) == static_cast<unsigned>(list[0]);
#pragma unroll
        for (int i = 0; i < 7; ++i) list[i] = won ? list[i + 1] : list[i];
        list[7] = won ? Pair{0} : list[7];
        if (active && won && r0 + q < k) a.ids[base + r0 + q] = static_cast<std::int32_t>(pair_expert(win));
        mine = sub == q ? pair_expert(win) : mine;
        last = win;
      }
      const unsigned r = r0 + static_cast<unsigned>(sub);
      // Past rank k a lane may hold a padding slot's index: it reads expert 0 instead.
      float w = score_of(a, row, r < k ? mine : 0u, m, inv);
      w = (r < k && !is_nan(w)) ? w : 0.0f;
      wsum += w;
      const unsigned round = r0 / LANES;
#pragma unroll
      for (int j = 0; j < HELD; ++j) held[j] = round == static_cast<unsigned>(j) ? w : held[j];
      if (active && r < k && round >= HELD) a.weights[base + r] = w;
    }
    wsum = row_sum<LANES>(ln, wsum);
    store_held_weights(a, ln, sub, base, active, held, wsum);
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
