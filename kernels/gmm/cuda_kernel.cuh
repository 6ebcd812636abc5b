#pragma once
// The grouped matmul kernel: tensor-core mma.sync m16n8k16 (bf16/f16 in, fp32 accumulate),
// operands staged through a cp.async multi-stage shared-memory pipeline and read with
// ldmatrix. A persistent grid walks a tile map built from the offsets by each CTA: experts
// without rows have no tiles and cost nothing; M tails (segment ends) and N tails are masked
// where they are stored, the K tail where it is loaded.
#include <algorithm>
#include <cstdint>

#include "common/cuda_pdl.cuh"
#include "gmm/cuda_configs.hpp"
// The cpu tests compile this file against emulated primitives, in a namespace of their own.
#ifndef GMM_EMULATED_PRIMITIVES
#include "gmm/cuda_primitives.cuh"
#define GMM_KERNEL_NAMESPACE cuda
#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

#ifdef GMM_EMULATED_PRIMITIVES
using cuda::KernelArgs;
using cuda::kRowPad;
#endif

GMM_DEVICE float silu(float x) { return x / (1.0f + exp_fast(-x)); }

// An expert's rows, clamped so that broken offsets can never address outside [0, rows).
GMM_DEVICE int seg_begin(const KernelArgs& p, int e) {
  return min(max(ldg(p.offsets + e), 0), p.rows);
}
GMM_DEVICE int seg_end(const KernelArgs& p, int e) {
  return max(seg_begin(p, e), min(max(ldg(p.offsets + e + 1), 0), p.rows));
}

// Warp 0 writes prefix[e] = M-tiles of experts before e, prefix[E] = all M-tiles. Each lane
// sums a contiguous run of experts, then one warp scan joins the runs.
template <int BM>
GMM_DEVICE void build_tile_prefix(const KernelArgs& p, int* prefix, int lane) {
  const int E = p.experts, chunk = (E + 31) / 32;
  const int eb = min(E, lane * chunk), ee = min(E, eb + chunk);
  int local = 0;
  for (int e = eb; e < ee; ++e) local += (seg_end(p, e) - seg_begin(p, e) + BM - 1) / BM;
  int incl = local;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = shfl_up(incl, d);
    if (lane >= d) incl += v;
  }
  int run = incl - local;
  for (int e = eb; e < ee; ++e) {
    prefix[e] = run;
    run += (seg_end(p, e) - seg_begin(p, e) + BM - 1) / BM;
  }
  if (lane == 31) prefix[E] = incl;
}

// ---- the kernel

template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool UP, bool BF16>
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

  // Stage s holds its A tile then its B tile at byte offset s * STAGE_BYTES; the tile prefix follows.
  constexpr std::uint32_t STAGE_BYTES = (A_STAGE + B_STAGE) * 2;
  std::uint16_t* smem = reinterpret_cast<std::uint16_t*>(dynamic_smem());
  int* prefix = reinterpret_cast<int*>(smem + STAGES * (A_STAGE + B_STAGE));

  const int tid = thread_x(), lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  // A thread copies 16-byte chunks chunk_k.. of rows chunk_row, chunk_row + ROW_STEP, ... of
  // each tile (for a 16-row tile with short rows only the first threads have an A chunk).
  constexpr int ROW_STEP = THREADS / CH;
  constexpr int A_CHUNKS = (BM * CH + THREADS - 1) / THREADS, B_CHUNKS = BN * CH / THREADS;
  static_assert(THREADS % CH == 0 && (BN * CH) % THREADS == 0, "whole rows per pass, B chunks spread evenly");
  const int chunk_row = tid / CH, chunk_k = (tid % CH) * 8;
  auto a_chunk_live = [&](int i) { return (BM * CH) % THREADS == 0 || chunk_row + i * ROW_STEP < BM; };
  const std::uint32_t chunk_dst = smem_u32(smem + chunk_row * LDS + chunk_k);
  // ldmatrix row addresses of this lane in stage 0 (A: 16 rows x two k halves; B: two n8 x k16).
  const std::uint32_t a_frag = smem_u32(smem + (warp_m * WM + (lane & 15)) * LDS + (lane >> 4) * 8);
  const std::uint32_t b_frag = smem_u32(smem + A_STAGE + (warp_n * WN + (lane & 7) + ((lane >> 4) << 3)) * LDS +
                                        ((lane >> 3) & 1) * 8);
  // Above: addresses only. The offsets (the tile map's source) and the activations are
  // earlier stages' outputs, so the first global read waits; only weights could go before it.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  if (warp == 0) build_tile_prefix<BM>(p, prefix, lane);
  sync_threads();

  const int E = p.experts;
  const long long total = static_cast<long long>(prefix[E]) * p.n_tiles * p.split;
  const int nk = (p.k_dim + BK - 1) / BK;

  for (long long t = block_x(); t < total; t += grid_x()) {
    // Splits vary fastest. Then, in groups of group_m M-tiles: the group's M-tiles for one
    // N-tile, then the next N-tile (group_m = 1: an M-tile's rows stay in L2 while N is swept;
    // larger: a weight tile serves group_m CTAs in a row). The last group may be short.
    const int s = static_cast<int>(t % p.split);
    const long long rest = t / p.split;
    const long long per_group = static_cast<long long>(p.group_m) * p.n_tiles;
    const int first_m = static_cast<int>(rest / per_group) * p.group_m;
    const int group = min(p.group_m, prefix[E] - first_m);
    const long long in_group = rest % per_group;
    const int mg = first_m + static_cast<int>(in_group % group);
    const int nt = static_cast<int>(in_group / group);
    int lo = 0, hi = E;  // prefix[lo] <= mg < prefix[hi]: lo ends at the expert owning mg
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (prefix[mid] <= mg) lo = mid;
      else hi = mid;
    }
    const int e = lo;
    const int row0 = seg_begin(p, e) + (mg - prefix[e]) * BM, row_end = seg_end(p, e);
    const int kt0 = static_cast<int>(static_cast<long long>(nk) * s / p.split);
    const int kt1 = static_cast<int>(static_cast<long long>(nk) * (s + 1) / p.split);
    const std::uint16_t* W = p.weight + static_cast<std::size_t>(e) * p.n_w * p.k_dim;

    // Each thread's chunks, fixed for the whole tile: the source row of each (held as a pointer
    // advanced by BK per slice) and its destination (one register plus immediates). Rows past
    // the segment or past n_out read a valid row instead of zero-filling: an output row (column)
    // depends only on its own A row (B row), and such rows are never stored. Only K needs masking,
    // and only in the one partial slice at the end of K, which has a loader of its own.
    const int k_first = kt0 * BK + chunk_k;
    const std::uint16_t* a_src[A_CHUNKS];
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i)
      a_src[i] = p.act + static_cast<std::size_t>(min(row0 + chunk_row + i * ROW_STEP, row_end - 1)) * p.k_dim + k_first;
    const std::uint16_t* b_src[B_CHUNKS];
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
        wrow = rr < HALF ? hcol : p.n_out + hcol;
      } else {
        wrow = min(nt * BN + r, p.n_out - 1);
      }
      b_src[i] = W + static_cast<std::size_t>(wrow) * p.k_dim + k_first;
    }

    // A whole slice into the stage at byte offset `off`; the sources move on to the next slice.
    auto load_full = [&](std::uint32_t off) {
      const std::uint32_t dst = chunk_dst + off;
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i) {
        if (a_chunk_live(i)) cp_async16(dst + i * ROW_STEP * LDS * 2, a_src[i], true);
        a_src[i] += BK;
      }
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) {
        cp_async16(dst + (A_STAGE + i * ROW_STEP * LDS) * 2, b_src[i], true);
        b_src[i] += BK;
      }
    };
    // The partial last slice of K: chunks past k_dim are zero-filled (nothing read).
    auto load_tail = [&](std::uint32_t off) {
      const std::uint32_t dst = chunk_dst + off;
      const bool ok = chunk_k < p.k_dim - (nk - 1) * BK;
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i)
        if (a_chunk_live(i)) cp_async16(dst + i * ROW_STEP * LDS * 2, ok ? a_src[i] : p.act, ok);
#pragma unroll
      for (int i = 0; i < B_CHUNKS; ++i) cp_async16(dst + (A_STAGE + i * ROW_STEP * LDS) * 2, ok ? b_src[i] : W, ok);
    };

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

    // The pipeline: STAGES-1 slices in flight while one is multiplied. Every iteration commits
    // a group (empty past the end) so wait_group counts stay exact. Slice `it` sits in stage
    // it % STAGES and slice it+STAGES-1 is loaded into the stage slice it-1 used.
    const int n = kt1 - kt0;
    const int n_full = n - ((kt1 == nk && p.k_dim % BK != 0) ? 1 : 0);
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st < n_full) load_full(st * STAGE_BYTES);
      else if (st < n) load_tail(st * STAGE_BYTES);
      cp_async_commit();
    }
    // load: 1 a whole slice, 2 the partial one, 0 none.
    auto iteration = [&](std::uint32_t rd, std::uint32_t wr, int load) {
      cp_async_wait<STAGES - 2>();
      sync_threads();  // slice `it` visible to all; slice it-1's buffer free for reuse
      if (load == 1) load_full(wr);
      else if (load == 2) load_tail(wr);
      cp_async_commit();
      compute_stage(rd);
    };
    // The k-loop proper, STAGES slices per trip so that every stage offset is a constant (and
    // the sources advance once per trip, the slices in between reached by immediate offsets):
    // every slice it loads is whole.
    int it = 0;
    for (; it + STAGES <= n_full - (STAGES - 1); it += STAGES) {
#pragma unroll
      for (int j = 0; j < STAGES; ++j) iteration(j * STAGE_BYTES, (j + STAGES - 1) % STAGES * STAGE_BYTES, 1);
    }
    // The rest (fewer than 2*STAGES slices): the stage offsets follow each other round a ring,
    // which the trips above left at its start; the partial slice of K, if any, is loaded here.
    std::uint32_t rd = 0, wr = (STAGES - 1) * STAGE_BYTES;
    for (; it < n; ++it) {
      const int nx = it + STAGES - 1;
      iteration(rd, wr, nx < n_full ? 1 : nx < n ? 2 : 0);
      wr = rd;
      rd = rd + STAGE_BYTES == STAGES * STAGE_BYTES ? 0 : rd + STAGE_BYTES;
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
          const float rw = (!UP && p.row_weight != nullptr) ? ldg(p.row_weight + r) : 1.0f;
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
                if constexpr (UP) {
                  v0 = silu(v0) * acc[i][j + NT / 2][hh * 2];
                  v1 = silu(v1) * acc[i][j + NT / 2][hh * 2 + 1];
                } else {
                  v0 *= rw;
                  v1 *= rw;
                }
                store_u32(p.out + static_cast<std::size_t>(r) * p.n_out + col, pack2<BF16>(v0, v1));
              }
            }
          }
        }
      }
    sync_threads();  // the next tile's prologue overwrites the stages
  }
}

// Split-K's second pass: the partial sums of every split, added in split order (the result
// does not depend on which CTA finished first), then the epilogue the main kernel skipped.
template <bool UP, bool BF16>
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
    if constexpr (UP) {
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
