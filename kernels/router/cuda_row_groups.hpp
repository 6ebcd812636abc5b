#pragma once
// Group selection (G > 1): score every group from its best two keys (or its max), keep the TG
// best, and drop the experts of the others from the running (key 0).
#include "router/cuda_row_load.hpp"
#include "router/cuda_row_reduce.hpp"

namespace moe::router::kern {

// Score of a group from its best two keys: fp32 sum for top2_sum (one expert: its own c).
ROUTER_FN float group_value(const Args& a, unsigned t1, unsigned t2) {
  float v = key_value(t1);
  if (a.top2 && a.GS > 1) v = v + key_value(t2);
  return v;
}

template <int LANES, int EPL, int V, int ESIZE>
struct RowGroups : RowLayout<LANES, EPL, V, ESIZE> {
  using RowLayout<LANES, EPL, V, ESIZE>::NCH;
  using RowLayout<LANES, EPL, V, ESIZE>::expert_of;

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
};

}  // namespace moe::router::kern
