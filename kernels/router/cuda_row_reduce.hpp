#pragma once
// Reductions of the router's row algorithm: across the LANES lanes of a row group (sums, maxima,
// argmax with the lower index on ties, best-two merges) and within a lane's own array.
#include "router/cuda_row_scalars.hpp"

namespace moe::router::kern {

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

}  // namespace moe::router::kern
