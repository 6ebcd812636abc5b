#pragma once
// The top-k strategies of the router's row algorithm, and the weight store they share: each picks
// the k best keys of the row group in order, writes their ids, and stores their weights
// (renormalised and scaled by rsf). cuda_row.hpp's RowKernel says which one a shape takes.
#include "router/cuda_row_load.hpp"
#include "router/cuda_row_pairs.hpp"
#include "router/cuda_row_reduce.hpp"

namespace moe::router::kern {

template <int LANES, int EPL, int V, int ESIZE>
struct RowSelect : RowLayout<LANES, EPL, V, ESIZE> {
  using RowLayout<LANES, EPL, V, ESIZE>::expert_of;
  // Ranks whose scores each lane keeps in registers: the first 32 ranks (all of them when a
  // lane holds the whole row).
  static constexpr int HELD = EPL < 32 / LANES ? EPL : 32 / LANES;

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
};

}  // namespace moe::router::kern
