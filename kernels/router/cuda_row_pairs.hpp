#pragma once
// Sorted lists of (key, expert) pairs for the 8-lane rows' top-k (select_sorted,
// cuda_row_select.hpp): a sorting network, a merge of two sorted lists, the row group's best pair.
#include "router/cuda_row_scalars.hpp"

namespace moe::router::kern {

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

}  // namespace moe::router::kern
