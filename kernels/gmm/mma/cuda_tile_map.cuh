#pragma once
// The tile map the mma kernel takes its work from: one 16-byte entry per M-tile, {expert, first
// row, end row, M-tiles in all}, written by a one-CTA schedule kernel launched just before it.
// A gmm CTA then learns its tile's expert from one load and starts streaming that expert's
// weights at once; building the per-expert prefix and searching it in every CTA put
// ceil(E/32) rounds of dependent offset loads before the first weight load.
// Included by cuda_kernel.cuh, in its namespace and over the same primitives.

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

// An expert's rows, clamped so that broken offsets can never address outside [0, rows).
GMM_DEVICE int seg_begin(const KernelArgs& p, int e) {
  return min(max(load_plain(p.offsets + e), 0), p.rows);
}
GMM_DEVICE int seg_end(const KernelArgs& p, int e) {
  return max(seg_begin(p, e), min(max(load_plain(p.offsets + e + 1), 0), p.rows));
}

// A decode kernel's tile (group_m 1): split, N-tile, expert and its rows.
struct DecodeTile {
  int s = 0, nt = 0, e = -1, row0 = 0, row_end = 0;
};
// Tile t of a decode walk into u: splits vary fastest, then N-tiles, then M-tiles, whose entry's
// last field (the M-tile count) replaces total_m (the map's size until then). `first`: a CTA's
// first tile, inside the map (the grid never exceeds its tiles). False past the last M-tile.
// Tile t's split and N-tile into u; returns its M-tile.
GMM_DEVICE int decode_tile_place(const KernelArgs& p, int t, DecodeTile& u) {
  const int rest = div_fast(t, p.split_div);
  u.s = rem_fast(t, rest, p.neg_split);
  const int mg = div_fast(rest, p.n_tiles_div);
  u.nt = rem_fast(rest, mg, p.neg_n_tiles);
  return mg;
}
GMM_DEVICE bool find_decode_tile(const KernelArgs& p, int t, int& total_m, bool first, DecodeTile& u) {
  const int mg = decode_tile_place(p, t, u);
  if (!first && mg >= total_m) return false;
  load_i32x4(p.tile_map + 4 * mg, u.e, u.row0, u.row_end, total_m);
  return u.e >= 0;  // expert -1: past the last M-tile (only the first entry can say so)
}
// The first K slice of split s (k_per, k_extra: the host's split of them, set_k_slices).
GMM_DEVICE int first_k_slice(const KernelArgs& p, int s) { return s * p.k_per + min(s, p.k_extra); }

// Before the PDL wait of a 16-row down kernel whose map is the layer front's (map_early): this
// CTA's first tile, from its map entry, and that tile's share of the weights (its rows, its
// split's K slices) sent to L2, so the weight stream starts while the predecessor (up) still
// runs; after the wait the pipeline finds them there. Both are safe to read this early: the
// weights no kernel writes, and the map was complete before this kernel launched. One bulk
// prefetch per row segment from lane 0 of each warp (its operands are uniform), or one for the
// whole tile when the split spans every row's K.
template <int BN, int THREADS>
GMM_DEVICE void prefetch_first_tile(const KernelArgs& p, const unsigned char* weight, std::size_t expert_bytes,
                                    std::uint32_t row_bytes, std::uint32_t slice_bytes) {
  const int tid = thread_x();
  if (!p.map_early || (tid & 31) != 0) return;
  DecodeTile u;
  const int mg = decode_tile_place(p, static_cast<int>(block_x()), u);
  int total;
  load_relaxed_i32x4(p.tile_map + 4 * mg, u.e, u.row0, u.row_end, total);
  if (u.e < 0) return;  // past the last M-tile (entries past it hold expert -1)
  const int s = u.s, nt = u.nt;
  const std::uint32_t k0 = static_cast<std::uint32_t>(first_k_slice(p, s)) * slice_bytes;
  const std::uint32_t k1 =
      min(k0 + static_cast<std::uint32_t>(p.k_per + (s < p.k_extra ? 1 : 0)) * slice_bytes, row_bytes);
  const int rows = min(BN, p.n_out - nt * BN);
  const unsigned char* w = weight + static_cast<std::size_t>(static_cast<std::uint32_t>(u.e)) * expert_bytes +
                           static_cast<std::size_t>(nt * BN) * row_bytes;
  if (k0 == 0 && k1 == row_bytes) {
    if (tid == 0) prefetch_l2(w, static_cast<std::uint32_t>(rows) * row_bytes);
    return;
  }
#pragma unroll 1
  for (int r = tid >> 5; r < rows; r += THREADS / 32) prefetch_l2(w + static_cast<std::size_t>(r) * row_bytes + k0, k1 - k0);
}

// Warp 0 writes prefix[e] = M-tiles of experts before e, prefix[E] = all M-tiles, and returns
// (in every lane) how many adjacent offsets decrease or leave [0, rows]: offsets a caller made
// by hand, which the clamps above keep in bounds but whose segments may overlap. Each lane
// sums a contiguous run of experts, then one warp scan joins the runs.
template <int BM>
GMM_DEVICE void build_tile_prefix(const KernelArgs& p, int* prefix, int lane) {
  const int E = p.experts, chunk = (E + 31) / 32;
  const int eb = min(E, lane * chunk), ee = min(E, eb + chunk);
  int local = 0, bad = 0;
  for (int e = eb; e < ee; ++e) {
    local += (seg_end(p, e) - seg_begin(p, e) + BM - 1) / BM;
    const int lo = load_plain(p.offsets + e), hi = load_plain(p.offsets + e + 1);
    bad += (hi < lo) | (lo < 0) | (hi > p.rows);
  }
  int incl = local, bad_all = bad;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = shfl_up(incl, d), w = shfl_up(bad_all, d);
    if (lane >= d) {
      incl += v;
      bad_all += w;
    }
  }
  int run = incl - local;
  for (int e = eb; e < ee; ++e) {
    prefix[e] = run;
    run += (seg_end(p, e) - seg_begin(p, e) + BM - 1) / BM;
  }
  if (lane == 31) {
    prefix[E] = incl;
    prefix[E + 1] = bad_all;
  }
}

// Every entry of the map, p.map_tiles of them (the most M-tiles `rows` can make); entries past
// the last M-tile hold expert -1. Overlapping segments can add up to more M-tiles than that:
// the count is clamped, so no walk reads past the map, and the entry after the map records
// {broken offsets, M-tiles the offsets asked for, 0, 0} for the host to report (the emu
// backend does; kMapStatus). Shared memory: the prefix and the broken count, experts + 2 ints.
template <int BM>
GMM_KERNEL(kScheduleThreads) gmm_schedule_kernel(const KernelArgs p) {
  int* prefix = reinterpret_cast<int*>(dynamic_smem());
  const int tid = thread_x();
  // offsets are dispatch's output, and the map it writes may still be read by the previous gmm
  // call's kernel on the stream: wait before either.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  if (tid < 32) build_tile_prefix<BM>(p, prefix, tid);
  sync_threads();
  const int E = p.experts, asked = prefix[E], total = min(asked, p.map_tiles);
  for (int mg = tid; mg < p.map_tiles; mg += kScheduleThreads) {
    int e = -1, row0 = 0, row_end = 0;
    if (mg < total) {
      int lo = 0, hi = E;  // prefix[lo] <= mg < prefix[hi]: lo ends at the expert owning mg
      while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (prefix[mid] <= mg) lo = mid;
        else hi = mid;
      }
      e = lo;
      row0 = seg_begin(p, e) + (mg - prefix[e]) * BM;
      row_end = seg_end(p, e);
    }
    store_i32x4(p.tile_map + 4 * mg, e, row0, row_end, total);
  }
  if (tid == 0) store_i32x4(p.tile_map + 4 * p.map_tiles, prefix[E + 1] + (asked > p.map_tiles), asked, 0, 0);
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
