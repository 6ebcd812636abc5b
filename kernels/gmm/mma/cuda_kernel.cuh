#pragma once
// The grouped matmul kernel: tensor-core mma.sync m16n8k16 (bf16/f16 in, fp32 accumulate),
// operands staged through a cp.async multi-stage shared-memory pipeline and read with
// ldmatrix. A persistent grid walks the tile map a schedule kernel wrote (cuda_tile_map.cuh):
// experts without rows have no tiles and cost nothing; M tails (segment ends) and N tails are masked
// where they are stored, the K tail where it is loaded.
#include <algorithm>
#include <cstdint>

#include "common/cuda_pdl.cuh"
#include "gmm/mma/cuda_configs.hpp"
// The cpu tests compile this file against emulated primitives, in a namespace of their own.
#ifndef GMM_EMULATED_PRIMITIVES
#include "gmm/cuda_primitives.cuh"
#define GMM_KERNEL_NAMESPACE cuda
#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

#ifdef GMM_EMULATED_PRIMITIVES
using cuda::FastDiv;
using cuda::KernelArgs;
using cuda::kRowPad;
using cuda::kScheduleThreads;
#endif

// cuda_configs.hpp's fast_div on the device: n / d for 0 <= n < 2^31.
GMM_DEVICE int div_fast(int n, FastDiv f) {
  return static_cast<int>((umulhi(static_cast<std::uint32_t>(n), f.mul) + static_cast<std::uint32_t>(n)) >> f.shift);
}
// n - q * d given q = n / d and neg_d = -d.
GMM_DEVICE int rem_fast(int n, int q, int neg_d) { return n + q * neg_d; }

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE

#include "gmm/mma/cuda_tile_map.cuh"
#include "gmm/mma/combine_fold.cuh"
#include "gmm/expert_fn.cuh"

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

GMM_DEVICE float silu(float x) { return x / (1.0f + exp_fast(-x)); }

// The epilogue of one output row's column pair (col, col + 1) of local expert e: up's gate sums
// v and up sums u become h, down's sums v are scaled by the row's routed weight rw. FN: the
// problem's expert function (f) instead, and a padding row's pair left at zero.
template <bool UP, bool BF16, bool FN>
GMM_DEVICE void epilogue_pair(const ExpertFnArgs& f, int e, int col, bool pad, float rw, float& v0, float& v1, float u0,
                              float u1) {
  if constexpr (FN) {
    if (pad) {
      v0 = v1 = 0.0f;
    } else if constexpr (UP) {
      v0 = fn_up<BF16>(f, e, col, v0, u0);
      v1 = fn_up<BF16>(f, e, col + 1, v1, u1);
    } else {
      v0 = fn_down<BF16>(f, e, col, v0, rw);
      v1 = fn_down<BF16>(f, e, col + 1, v1, rw);
    }
  } else if constexpr (UP) {
    v0 = silu(v0) * u0;
    v1 = silu(v1) * u1;
  } else {
    v0 *= rw;
    v1 *= rw;
  }
}

// Which weight row a thread's B chunk i of a tile copies, split into the thread's part and a
// constant of i, so that each chunk's source is one multiply-add from the thread's first and a
// tile's first weight load needs no per-chunk arithmetic. Chunk i sits in shared row
// chunk_row + i * ROW_STEP (chunk_row < ROW_STEP). Down: weight row = tile's first + shared row.
// Up: shared row r belongs to warp column r / WN, whose first half are the gate rows of its HALF
// h columns and whose second half the up rows of the same columns (up_elems further on: n_out
// rows, or an interleaved w13's block; FN kernels also move each h column's gate row).
template <bool UP, int WN, int ROW_STEP>
struct ChunkRows {
  static constexpr int HALF = WN / 2;
  // A thread's chunks share their warp column position (ROW_STEP a multiple of WN) or lie inside
  // one half of it (ROW_STEP dividing HALF); every tile here is one of the two.
  static constexpr bool kSpansColumns = ROW_STEP % WN == 0;
  static_assert(!UP || kSpansColumns || HALF % ROW_STEP == 0, "up: a thread's chunks split evenly over warp columns");
  // The thread's h column (up) or row (down) within the tile, and whether it copies up rows.
  GMM_DEVICE static int first(int chunk_row) {
    if constexpr (!UP || !kSpansColumns) return chunk_row;
    else return (chunk_row / WN) * HALF + (chunk_row % WN) % HALF;
  }
  GMM_DEVICE static bool thread_up(int chunk_row) {
    // chunk_row % WN >= HALF, WN a power of two: one bit.
    static_assert((WN & (WN - 1)) == 0, "warp columns are a power of two wide");
    if constexpr (UP && kSpansColumns) return (static_cast<unsigned>(chunk_row) & HALF) != 0;
    else return false;
  }
  // Chunk i's h column (row) past the thread's first, and whether it is an up row (when the
  // thread's are not).
  static constexpr int offset(int i) {
    const int r = i * ROW_STEP;
    if (!UP) return r;
    if (kSpansColumns) return (r / WN) * HALF;
    return (r / WN) * HALF + (r % WN) % HALF;
  }
  static constexpr bool up(int i) { return UP && !kSpansColumns && (i * ROW_STEP) % WN >= HALF; }
};

// ---- the kernel

// FN: the problem's expert function (p.fn, expert_fn.cuh: w13's row order, the biases, gpt-oss's
// clamped SwiGLU, padding rows left zero) in place of silu(gate)*up on split rows; a separate
// instantiation, so that the plain kernels' code does not change.
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool UP, bool BF16, bool FN = false>
GMM_KERNEL(WARPS_M* WARPS_N * 32) gmm_mma_kernel(const KernelArgs p) {
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // a warp's sub-tile
  constexpr int MT = WM / 16, NT = WN / 8;              // its m16 and n8 mma tiles
  constexpr int LDS = BK + static_cast<int>(kRowPad);   // shared row stride, elements
  constexpr int A_STAGE = BM * LDS, B_STAGE = BN * LDS;
  constexpr int CH = BK / 8;  // 16-byte chunks per tile row
  static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0, "warp tiles are whole m16 x n16 blocks");
  static_assert(BK % 16 == 0 && STAGES >= 2, "k16 steps, at least double buffering");
  static_assert(!UP || (WN / 2) % 8 == 0, "up: each warp's gate and up halves are whole n8 tiles");

  // Stage s holds its A tile then its B tile at byte offset s * STAGE_BYTES.
  constexpr std::uint32_t STAGE_BYTES = (A_STAGE + B_STAGE) * 2;
  std::uint16_t* smem = reinterpret_cast<std::uint16_t*>(dynamic_smem());

  const int tid = thread_x(), lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  // A thread copies 16-byte chunks chunk_k.. of rows chunk_row, chunk_row + ROW_STEP, ... of
  // each tile (for a 16-row tile with short rows only the first threads have an A chunk).
  constexpr int ROW_STEP = THREADS / CH;
  constexpr int A_CHUNKS = (BM * CH + THREADS - 1) / THREADS, B_CHUNKS = BN * CH / THREADS;
  static_assert(THREADS % CH == 0 && (BN * CH) % THREADS == 0, "whole rows per pass, B chunks spread evenly");
  // A 16-row tile is decode's: its CTA is short-lived and waits on the weights alone, so a tile's
  // first weight slice is on its way before anything else of the tile is set up (the next
  // tile's, at the end of the one before). Its tiles are walked one M-tile at a time (group_m 1,
  // invalid_reason). Its thread index splits unsigned: with shifts and masks.
  constexpr bool DECODE = BM == 16;
  const int chunk_row = DECODE ? static_cast<int>(static_cast<unsigned>(tid) / CH) : tid / CH;
  const int chunk_k = (DECODE ? static_cast<int>(static_cast<unsigned>(tid) % CH) : tid % CH) * 8;
  auto a_chunk_live = [&](int i) { return (BM * CH) % THREADS == 0 || chunk_row + i * ROW_STEP < BM; };
  const std::uint32_t chunk_dst = smem_u32(smem + chunk_row * LDS + chunk_k);
  // ldmatrix row addresses of this lane in stage 0 (A: 16 rows x two k halves; B: two n8 x k16).
  const std::uint32_t a_frag = smem_u32(smem + (warp_m * WM + (lane & 15)) * LDS + (lane >> 4) * 8);
  const std::uint32_t b_frag = smem_u32(smem + A_STAGE + (warp_n * WN + (lane & 7) + ((lane >> 4) << 3)) * LDS +
                                        ((lane >> 3) & 1) * 8);
  // Above: addresses only. The tile map (the schedule kernel's), the offsets and the activations
  // are earlier kernels' outputs, and which weights to load comes from the map: wait first,
  // unless the map is older than the predecessor (map_early: decode's down sends its first
  // tile's weights to L2 ahead of the wait).
  if constexpr (DECODE && !UP)
    prefetch_first_tile<BN, THREADS>(p, reinterpret_cast<const unsigned char*>(p.weight),
                                     static_cast<std::size_t>(p.n_w) * static_cast<std::uint32_t>(p.k_dim) * 2,
                                     static_cast<std::uint32_t>(p.k_dim) * 2, BK * 2);
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  // The tile order: splits vary fastest. Then, in groups of group_m M-tiles: the group's M-tiles
  // for one N-tile, then the next N-tile (group_m = 1: an M-tile's rows stay in L2 while N is
  // swept; larger: a weight tile serves group_m CTAs in a row). group_m > 1 (prefill) needs the
  // M-tile count before its first tile; decode's group_m = 1 learns it from its first entry,
  // bounded meanwhile by the map's size (the grid never exceeds it).
  const int nk = (p.k_dim + BK - 1) / BK;
  int total_m = !DECODE && p.group_m > 1 ? load_plain(p.tile_map + 3) : p.map_tiles;

  // Each thread's chunks, fixed for the whole tile: the source row of each (held as a pointer
  // advanced by BK per slice) and its destination (one register plus immediates). Rows past
  // the segment or past n_out read a valid row instead of zero-filling: an output row (column)
  // depends only on its own A row (B row), and such rows are never stored. Only K needs masking,
  // and only in the one partial slice at the end of K, which has a loader of its own.
  // Offsets within an expert's weights and within the activations fit 32 bits (invalid_reason).
  //
  // Decode's walk: a tile's coordinates, then its first weights, then the rest of its set-up.
  // Taller tiles decode their tile in the loop (with group_m) and split K as (nk * s) / split;
  // decode takes its split's slices from the host (set_k_slices), without a division.
  using Tile = DecodeTile;
  auto find_tile = [&](int t, Tile& u, bool first = false) { return find_decode_tile(p, t, total_m, first, u); };
  // The split's first K slice and the expert's weights.
  auto first_slice = [&](const Tile& u) { return first_k_slice(p, u.s); };
  auto expert_weights = [&](const Tile& u) {
    return p.weight + static_cast<std::size_t>(static_cast<std::uint32_t>(u.e)) *
                          (static_cast<std::uint32_t>(p.n_w) * static_cast<std::uint32_t>(p.k_dim));
  };
  // A decode tile's weight sources, each chunk's one multiply-add from the thread's first
  // (ChunkRows; an up thread's rows are n_out further on: up_elems), and stage 0's weights: the
  // split's first whole slice, zeros if it has none (decode's partial slice goes to stage 1).
  // Returns what sets and issues chunks [from, to).
  using Rows = ChunkRows<UP, WN, ROW_STEP>;
  const int thread_row = Rows::first(chunk_row);
  const std::uint16_t* b_next[B_CHUNKS];
  auto decode_weights = [&](const Tile& u) {
    const std::uint16_t* W = expert_weights(u);
    const int tile_row = u.nt * (UP ? BN / 2 : BN) + thread_row, last_row = p.n_out - 1;
    const std::uint32_t k_off =
        first_slice(u) * BK + chunk_k + (Rows::thread_up(chunk_row) ? p.up_elems : 0u);
    const bool live = u.s != p.tail_only_split;
    return [=, &b_next](int from, int to) {
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) {
        if (i < from || i >= to) continue;
        int row = min(tile_row + Rows::offset(i), last_row);
        if constexpr (UP && FN) row = fn_gate_row(p.fn, row);  // the h column's gate row
        b_next[i] = W + (static_cast<std::uint32_t>(row) * static_cast<std::uint32_t>(p.k_dim) + k_off +
                         (Rows::up(i) ? p.up_elems : 0u));
        cp_async16(chunk_dst + (A_STAGE + i * ROW_STEP * LDS) * 2, b_next[i], live);
      }
    };
  };
  Tile next;
  if constexpr (DECODE) {
    if (!find_tile(static_cast<int>(block_x()), next, true)) return;
    const auto chunks = decode_weights(next);
    chunks(0, 1);
    // Never taken: a branch, so that the other chunks and the rest of the set-up are scheduled
    // after the first weight load instead of ahead of it. Were it taken, the copies in flight
    // would land first (committed, then waited for).
    if (next.s < 0) {
      cp_async_commit();
      cp_async_wait<0>();
      return;
    }
    chunks(1, B_CHUNKS);
  }
  std::uint32_t fold_mine = 0;  // down folding combine: the N-tiles this CTA finished last (combine_fold.cuh)
  for (int t = static_cast<int>(block_x());; t += static_cast<int>(grid_x())) {
    int s, nt, row0, row_end, kt0, n, e = 0;
    bool tail;
    const std::uint16_t* W;
    const std::uint16_t* b_src[B_CHUNKS];
    if constexpr (DECODE) {
      s = next.s, nt = next.nt, row0 = next.row0, row_end = next.row_end;
      if constexpr (FN) e = next.e;
      kt0 = first_slice(next);
      n = p.k_per + (s < p.k_extra ? 1 : 0);
      tail = s == p.tail_split;  // the partial last slice is the last split's
      W = expert_weights(next);
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) b_src[i] = b_next[i];
    } else {
      const int rest = div_fast(t, p.split_div);
      s = t - rest * p.split;  // splits vary fastest
      int mg;
      if (p.group_m == 1) {
        mg = div_fast(rest, p.n_tiles_div);
        nt = rest - mg * p.n_tiles;
      } else {
        // A short last group keeps its group_m slots per N-tile; those past the last M-tile are
        // skipped (dividing by the short group's size would put a division before every load).
        const int g = div_fast(rest, p.group_tiles_div), in_group = rest - g * p.group_m * p.n_tiles;
        nt = div_fast(in_group, p.group_m_div);
        mg = g * p.group_m + (in_group - nt * p.group_m);
        if (mg >= total_m && g * p.group_m < total_m) continue;
      }
      if (mg >= total_m) break;
      load_i32x4(p.tile_map + 4 * mg, e, row0, row_end, total_m);
      if (e < 0) break;  // past the last M-tile (only the first entry can say so)
      kt0 = div_fast(nk * s, p.split_div);
      const int kt1 = div_fast(nk * (s + 1), p.split_div);
      n = kt1 - kt0;
      tail = kt1 == nk && p.k_dim % BK != 0;
      W = p.weight + static_cast<std::size_t>(e) * p.n_w * p.k_dim;
      const std::uint32_t k_first = kt0 * BK + chunk_k;
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) {
        const int r = chunk_row + i * ROW_STEP;
        int wrow;
        if constexpr (UP) {
          // Shared row r belongs to warp column r / WN: its first half are gate rows, its
          // second half the up rows of the same h columns.
          constexpr int HALF = WN / 2;
          const int rr = r % WN;
          const int hcol = min(nt * (BN / 2) + (r / WN) * HALF + (rr % HALF), p.n_out - 1);
          if constexpr (FN) {
            const int gate = fn_gate_row(p.fn, hcol);
            wrow = rr < HALF ? gate : gate + p.fn.up_rows;
          } else {
            wrow = rr < HALF ? hcol : p.n_out + hcol;
          }
        } else {
          wrow = min(nt * BN + r, p.n_out - 1);
        }
        b_src[i] = W + (static_cast<std::uint32_t>(wrow) * static_cast<std::uint32_t>(p.k_dim) + k_first);
      }
    }
    const int n_whole = n - (tail ? 1 : 0);
    const std::uint32_t k_first = kt0 * BK + chunk_k;

    const std::uint16_t* a_src[A_CHUNKS];
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i)
      a_src[i] = p.act + (static_cast<std::uint32_t>(min(row0 + chunk_row + i * ROW_STEP, row_end - 1)) *
                              static_cast<std::uint32_t>(p.k_dim) + k_first);

    // Whole slice `j` of a trip (the sources sit at the trip's first slice) into the stage at byte
    // offset `off`; `live` false zero-fills it without reading (a slice past the end of K). Its
    // weights too unless `weights` is false (decode's stage 0 had them first).
    auto load_full = [&](std::uint32_t off, int j, bool live, bool weights = true) {
      const std::uint32_t dst = chunk_dst + off;
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i)
        if (weights) cp_async16(dst + (A_STAGE + i * ROW_STEP * LDS) * 2, b_src[i] + j * BK, live);
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i)
        if (a_chunk_live(i)) cp_async16(dst + i * ROW_STEP * LDS * 2, a_src[i] + j * BK, live);
    };
    auto advance = [&](int slices) {
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) b_src[i] += slices * BK;
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i) a_src[i] += slices * BK;
    };
    // The partial last slice of K, `back` whole slices past the sources: chunks past k_dim are
    // zero-filled (nothing read).
    auto load_tail = [&](std::uint32_t off, int back) {
      const std::uint32_t dst = chunk_dst + off;
      const bool ok = chunk_k < p.k_dim - (nk - 1) * BK;
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i)
        cp_async16(dst + (A_STAGE + i * ROW_STEP * LDS) * 2, ok ? b_src[i] + back * BK : W, ok);
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i)
        if (a_chunk_live(i)) cp_async16(dst + i * ROW_STEP * LDS * 2, ok ? a_src[i] + back * BK : p.act, ok);
    };

    // The pipeline: STAGES-1 slices in flight while one is multiplied. Every iteration commits
    // a group so wait_group counts stay exact. The partial slice of K, if this split has it, goes
    // in the prologue (the sum does not care about order), so every later load is a whole slice:
    // the k-loop proper and the rest share one loader and the rest needs no K mask. It takes
    // stage 0, or stage 1 in a decode tile, whose stage 0 is the first whole slice (its weights
    // issued first, unmasked).
    constexpr int TAIL_STAGE = DECODE ? 1 : 0;
    static_assert(TAIL_STAGE < STAGES - 1, "the partial slice has a stage in the prologue");
    if (!DECODE && tail) load_tail(0, n_whole);
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st == TAIL_STAGE && tail) {
        if (DECODE) load_tail(st * STAGE_BYTES, n_whole);
        cp_async_commit();
        continue;
      }
      const int w = st - (tail && st > TAIL_STAGE ? 1 : 0);  // the whole slice this stage gets
      load_full(st * STAGE_BYTES, w, w < n_whole, !DECODE || st > 0);
      cp_async_commit();
    }
    advance(STAGES - 1 - (tail ? 1 : 0));

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    auto compute_stage = [&](std::uint32_t off) {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        std::uint32_t af[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], a_frag + off + (i * 16 * LDS + kk) * 2);
        std::uint32_t bf[NT][2];
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
          std::uint32_t r[4];
          ldmatrix_x4(r, b_frag + off + (j * 16 * LDS + kk) * 2);
          bf[2 * j][0] = r[0];
          bf[2 * j][1] = r[1];
          bf[2 * j + 1][0] = r[2];
          bf[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT; ++j) mma16816<BF16>(acc[i][j], af[i], bf[j][0], bf[j][1]);
      }
    };

    // Slice j of a trip sits in stage j: wait for it, free the stage the slice before used and
    // refill it with the slice STAGES-1 ahead (zeros when that is past K), multiply.
    auto iteration = [&](int j, bool live) {
      cp_async_wait<STAGES - 2>();
      sync_threads();  // slice j visible to all; the previous slice's buffer free for reuse
      load_full((j + STAGES - 1) % STAGES * STAGE_BYTES, j, live);
      cp_async_commit();
      compute_stage(j * STAGE_BYTES);
    };
    // The k-loop proper, STAGES slices per trip so that every stage offset is a constant (and
    // the sources advance once per trip, the slices in between reached by immediate offsets):
    // every slice it loads is inside K.
    int it = 0;
    for (; it + 2 * STAGES - 1 <= n; it += STAGES) {
#pragma unroll
      for (int j = 0; j < STAGES; ++j) iteration(j, true);
      advance(STAGES);
    }
    // The rest (fewer than 2*STAGES-1 slices) in the same trips, where a load past K zero-fills
    // its stage instead of reading. A 16-row tile multiplies those zeros rather than test every
    // slice (its few HMMAs per slice are cheap, its instructions are not); larger tiles stop.
    for (; it < n; it += STAGES) {
#pragma unroll
      for (int j = 0; j < STAGES; ++j) {
        if (BM > 16 && it + j >= n) break;
        iteration(j, it + j + STAGES - 1 < n);
      }
      advance(STAGES);
    }
    cp_async_wait<0>();

    // Epilogue straight from the accumulators: thread holds rows lane/4 (+8), columns 2*(lane%4) (+1).
    const int col_base = UP ? nt * (BN / 2) + warp_n * (WN / 2) : nt * BN + warp_n * WN;
    constexpr int NOUT = UP ? NT / 2 : NT;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = row0 + warp_m * WM + i * 16 + (lane >> 2) + hh * 8;
        if (r < row_end) {
          const float rw = (!UP && p.row_weight != nullptr) ? load_plain(p.row_weight + r) : 1.0f;
          const bool pad = FN && p.split == 1 && fn_pad_row(p.fn, r);
#pragma unroll
          for (int j = 0; j < NOUT; ++j) {
            const int col = col_base + j * 8 + (lane & 3) * 2;
            if (col < p.n_out) {
              float v0 = acc[i][j][hh * 2], v1 = acc[i][j][hh * 2 + 1];
              if (p.split > 1) {
                float* dst = p.partial + (static_cast<std::size_t>(s) * p.rows + r) * p.n_w;
                store_f32x2(dst + col, v0, v1);
                if constexpr (UP)
                  store_f32x2(dst + p.n_out + col, acc[i][j + NT / 2][hh * 2], acc[i][j + NT / 2][hh * 2 + 1]);
              } else {
                float u0 = 0.0f, u1 = 0.0f;
                if constexpr (UP) u0 = acc[i][j + NT / 2][hh * 2], u1 = acc[i][j + NT / 2][hh * 2 + 1];
                epilogue_pair<UP, BF16, FN>(p.fn, e, col, pad, rw, v0, v1, u0, u1);
                store_u32(p.out + static_cast<std::size_t>(r) * p.n_out + col, pack2<BF16>(v0, v1));
              }
            }
          }
        }
      }
    // The next tile's prologue overwrites the stages; a decode down may fold combine (counted here).
    if constexpr (UP || !DECODE) sync_threads();
    else end_down_tile(p, nt, total_m, fold_mine);
    if constexpr (DECODE) {
      if (!find_tile(t + static_cast<int>(grid_x()), next)) break;
      decode_weights(next)(0, B_CHUNKS);
    }
  }
  if constexpr (!UP && DECODE) fold_tail<BF16, THREADS>(p, BN, fold_mine);
}

// Split-K's second pass: the partial sums of every split, added in split order (the result
// does not depend on which CTA finished first), then the epilogue the main kernel skipped. FN:
// the expert function of p.fn (biases added once, to the sum; padding rows left zero), for the
// kernels instantiated with it.
template <bool UP, bool BF16, bool FN = false>
GMM_KERNEL(256) gmm_finalize_kernel(const KernelArgs p) {
  // The partial sums are the main kernel's output, the offsets dispatch's.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const int half = p.n_out / 2;
  // Rows past offsets[E] hold no partials (the layer sizes its buffers for the worst case).
  const long long total = static_cast<long long>(seg_end(p, p.experts - 1)) * half;
  for (long long idx = block_x() * 256 + thread_x(); idx < total; idx += grid_x() * 256) {
    const int r = static_cast<int>(idx / half), c = static_cast<int>(idx % half) * 2;
    float g0 = 0, g1 = 0, u0 = 0, u1 = 0;
    for (int s = 0; s < p.split; ++s) {
      const float* src = p.partial + (static_cast<std::size_t>(s) * p.rows + r) * p.n_w;
      float a, b;
      load_f32x2(src + c, a, b);
      g0 += a;
      g1 += b;
      if constexpr (UP) {
        load_f32x2(src + p.n_out + c, a, b);
        u0 += a;
        u1 += b;
      }
    }
    if constexpr (FN) {
      // Only a bias needs the row's expert.
      const int e = p.fn.bias != nullptr ? fn_row_expert(p.offsets, p.experts, p.rows, r) : 0;
      if constexpr (UP) {
        g0 = fn_up<BF16>(p.fn, e, c, g0, u0);
        g1 = fn_up<BF16>(p.fn, e, c + 1, g1, u1);
      } else {
        const float w = p.row_weight != nullptr ? p.row_weight[r] : 1.0f;
        g0 = fn_down<BF16>(p.fn, e, c, g0, w);
        g1 = fn_down<BF16>(p.fn, e, c + 1, g1, w);
      }
      if (fn_pad_row(p.fn, r)) g0 = g1 = 0.0f;
    } else if constexpr (UP) {
      g0 = silu(g0) * u0;
      g1 = silu(g1) * u1;
    } else if (p.row_weight != nullptr) {
      const float w = p.row_weight[r];
      g0 *= w;
      g1 *= w;
    }
    store_u32(p.out + static_cast<std::size_t>(r) * p.n_out + c, pack2<BF16>(g0, g1));
  }
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
