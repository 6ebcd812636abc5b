#pragma once
// The fp8 decode kernel (DESIGN.md 1.6): e4m3 activations and weights stream through a cp.async
// pipeline at one byte per element, each K slice being one 128-wide scale block. Hopper has no
// e4m3 mma.sync, so fragments are read from shared memory as 32-bit words of four codes,
// converted to f16 pairs in registers (exact: every e4m3 value is an f16) and multiplied by
// mma.sync m16n8k16 into per-block fp32 sums, which are then promoted into the accumulators
// times x_scale * w_scale. The sum inside a block is order-free, so a lane's four bytes
// 4t..4t+3 of a 16-byte k step stand for the mma's k = 2t,2t+1 and 2t+8,2t+9 in both A and B.
// Epilogues: down multiplies by the routed weight and rounds once to bf16 (or writes split-K
// partials); up either quantizes h in place (fused_up: the CTA holds whole 128-column groups)
// or writes gate|up in fp32 for the silu*up+quant pass.
#include <cstdint>

#include "common/e4m3.hpp"
#include "gmm/mma/cuda_kernel.cuh"
#include "gmm/fp8_mma/fp8_mma_configs.hpp"
#include "gmm/fp8_mma/fp8_mma_primitives.cuh"

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

// A warp's mma accumulators: MT x NT tiles of four floats.
template <int MT, int NT>
GMM_DEVICE void zero_frags(float (&v)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) v[i][j][q] = 0.0f;
}

template <int BM, int BN, int WARPS_N, int STAGES, bool UP>
GMM_KERNEL(WARPS_N * 32) gmm_fp8_mma_kernel(const fp8_mma::Args p) {
  constexpr int THREADS = WARPS_N * 32;
  constexpr int WN = BN / WARPS_N, MT = BM / 16, NT = WN / 8;
  constexpr int LDS = fp8_mma::kRowBytes, BK = fp8_mma::kBlockK;
  constexpr int A_STAGE = BM * LDS, STAGE_BYTES = (BM + BN) * LDS;
  constexpr int CH = BK / 16;  // 16-byte chunks per row
  constexpr int ROW_STEP = THREADS / CH;
  constexpr int A_CHUNKS = (BM * CH + THREADS - 1) / THREADS, B_CHUNKS = BN * CH / THREADS;
  constexpr bool FUSED = UP && BN / 2 == 128;
  constexpr int SC = BM + BN / 8;  // fp8_mma::stage_scales
  static_assert(BM % 16 == 0 && WN % 16 == 0 && (BN * CH) % THREADS == 0, "whole m16 x n16 warp tiles");
  static_assert(SC <= THREADS, "one thread copies each of a stage's scales");
  static_assert(!UP || (WN / 2) % 8 == 0, "up: each warp's gate and up halves are whole n8 tiles");

  unsigned char* smem = dynamic_smem();
  float* scl = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES);  // [STAGES][SC]
  float* amax_part = scl + STAGES * SC;                                // [BM][WARPS_N * 4]

  const int tid = thread_x(), lane = tid & 31, warp_n = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Unsigned: a thread index splits with a shift and a mask.
  const int chunk_row = static_cast<int>(static_cast<unsigned>(tid) / CH);
  const int chunk_k = static_cast<int>(static_cast<unsigned>(tid) % CH) * 16;
  // The tile map (the schedule kernel's), the activations and their scales are earlier kernels'
  // outputs, and the workspace's partials may still be read by the previous call's finalize:
  // wait before all; but a 16-row down tile whose map is older than its predecessor (map_early)
  // sends its first tile's weights to L2 ahead of the wait.
  if constexpr (!UP && BM == 16)
    prefetch_first_tile<BN, THREADS>(p.b, p.weight, p.expert_bytes, static_cast<std::uint32_t>(p.b.k_dim), BK);
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();

  const int KB = static_cast<int>(static_cast<unsigned>(p.b.k_dim) / BK), NWB = static_cast<int>(static_cast<unsigned>(p.b.n_w) / BK);
  // A CTA's tile: splits vary fastest, then N-tiles (the CTAs sharing an M-tile's activations
  // run together), then M-tiles, whose expert and rows come from one tile map entry; its last
  // field, the M-tile count, bounds the walk (the map's size until the first entry is read).
  int total_m = p.b.map_tiles;
  DecodeTile tile_now;
  int &s = tile_now.s, &nt = tile_now.nt, &e = tile_now.e, &row0 = tile_now.row0, &row_end = tile_now.row_end;
  auto find_tile = [&](int tile, bool first = false) { return find_decode_tile(p.b, tile, total_m, first, tile_now); };

  // Weight row of a shared B row (up: a warp's rows are its gate half, then the matching up
  // half). Up's N-tiles cover I exactly (a multiple of 128, invalid_reason); down's 256-row
  // tiles may overhang D (a multiple of 128): rows past it read the last row, never stored.
  constexpr bool OVERHANG = !UP && BN > 128;
  auto weight_row = [&](int r) {
    if constexpr (UP) {
      constexpr int HALF = WN / 2;
      const int rr = r % WN, hcol = nt * (BN / 2) + (r / WN) * HALF + rr % HALF;
      return rr < HALF ? hcol : p.b.n_out + hcol;
    } else {
      return min(nt * BN + r, p.b.n_out - 1);
    }
  };
  // Each thread's chunks of a stage and their destination. The weights are what a decode tile
  // waits on: a tile's first weight slice is on its way before anything else of the tile is set
  // up (the next tile's, at the end of the one before).
  using Rows = ChunkRows<UP, WN, ROW_STEP>;
  const std::uint32_t chunk_dst = smem_u32(smem + chunk_row * LDS + chunk_k);
  const int thread_row = Rows::first(chunk_row);
  const std::uint32_t thread_up = Rows::thread_up(chunk_row) ? p.up_bytes : 0;
  const std::uint8_t* b_src[B_CHUNKS];
  int kb0 = 0, n = 0;
  // Chunks [from, to) of the tile's first slice (the split's first K block: k_per and k_extra
  // are the host's split of them, n >= 1 of them as split_k <= K blocks).
  auto weights_first = [&](int from, int to) {
    kb0 = first_k_slice(p.b, s);
    // Offsets inside an expert's weights fit 32 bits (plan_args).
    const std::uint8_t* gate =
        p.weight + static_cast<std::size_t>(static_cast<std::uint32_t>(e)) * p.expert_bytes + thread_up +
        (static_cast<std::uint32_t>(nt * (UP ? BN / 2 : BN) + thread_row) * static_cast<std::uint32_t>(p.b.k_dim) +
         static_cast<std::uint32_t>(kb0 * BK + chunk_k));
    const std::uint8_t* up = gate + p.up_bytes;
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      if (i < from || i >= to) continue;
      const std::uint32_t row = OVERHANG ? min(Rows::offset(i), p.b.n_out - 1 - nt * BN - thread_row) : Rows::offset(i);
      b_src[i] = (Rows::up(i) ? up : gate) + row * static_cast<std::uint32_t>(p.b.k_dim);
      cp_async16(chunk_dst + A_STAGE + i * ROW_STEP * LDS, b_src[i], true);
      b_src[i] += BK;
    }
    if (to == B_CHUNKS) n = p.b.k_per + (s < p.b.k_extra ? 1 : 0);
  };

  int tile = static_cast<int>(block_x());
  if (!find_tile(tile, true)) return;
  weights_first(0, 1);
  // Never taken: a branch, so that the other chunks and the rest of the set-up are scheduled
  // after the first weight load instead of ahead of it. Were it taken, the copies in flight
  // would land first (committed, then waited for).
  if (kb0 < 0) {
    cp_async_commit();
    cp_async_wait<0>();
    return;
  }
  weights_first(1, B_CHUNKS);
  const std::uint32_t sc_dst = smem_u32(scl + tid);
  std::uint32_t fold_mine = 0;  // down folding combine: the N-tiles this CTA finished last (combine_fold.cuh)
  for (;;) {
    const std::uint8_t* a_src[A_CHUNKS];
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i)
      a_src[i] = p.act + static_cast<long long>(min(row0 + chunk_row + i * ROW_STEP, row_end - 1)) * p.b.k_dim +
                 kb0 * BK + chunk_k;
    // The scales travel with their slice through the pipeline: read from global memory inside
    // the k-loop, each slice's promotion waited a dependent load (~1 us at decode).
    const float* sc_src = nullptr;
    if (tid < BM) sc_src = p.act_scale + static_cast<long long>(min(row0 + tid, row_end - 1)) * KB + kb0;
    else if (tid < SC) sc_src = p.w_scale + (static_cast<long long>(e) * NWB + weight_row((tid - BM) * 8) / BK) * KB + kb0;
    // A stage's activations and scales; its weights too unless `weights` is false (stage 0's
    // went first).
    auto load = [&](int stage, bool weights) {
      const std::uint32_t dst = chunk_dst + stage * STAGE_BYTES;
      if (sc_src) cp_async4(sc_dst + stage * SC * 4, sc_src++);
#pragma unroll
      for (int i = 0; i < A_CHUNKS; ++i) {
        if ((BM * CH) % THREADS == 0 || chunk_row + i * ROW_STEP < BM) cp_async16(dst + i * ROW_STEP * LDS, a_src[i], true);
        a_src[i] += BK;
      }
      if (weights) {
#pragma unroll
        for (int i = 0; i < B_CHUNKS; ++i) {
          cp_async16(dst + A_STAGE + i * ROW_STEP * LDS, b_src[i], true);
          b_src[i] += BK;
        }
      }
    };

    float acc[MT][NT][4];
    zero_frags(acc);

    auto compute = [&](int stage) {
      const unsigned char* a_base = smem + stage * STAGE_BYTES + g * LDS + 4 * t;
      const unsigned char* b_base = a_base + A_STAGE + warp_n * WN * LDS;
      float blk[MT][NT][4];
      zero_frags(blk);
#pragma unroll
      for (int ks = 0; ks < BK; ks += 16) {
        std::uint32_t af[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const std::uint32_t lo = lds_u32(a_base + i * 16 * LDS + ks), hi = lds_u32(a_base + (i * 16 + 8) * LDS + ks);
          af[i][0] = e4m3x2_to_f16x2(lo & 0xFFFFu);
          af[i][2] = e4m3x2_to_f16x2(lo >> 16);
          af[i][1] = e4m3x2_to_f16x2(hi & 0xFFFFu);
          af[i][3] = e4m3x2_to_f16x2(hi >> 16);
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const std::uint32_t w = lds_u32(b_base + j * 8 * LDS + ks);
          const std::uint32_t b0 = e4m3x2_to_f16x2(w & 0xFFFFu), b1 = e4m3x2_to_f16x2(w >> 16);
#pragma unroll
          for (int i = 0; i < MT; ++i) mma16816<false>(blk[i][j], af[i], b0, b1);
        }
      }
      // DeepGEMM-style promotion: the block's fp32 sums times its two scales, into the totals.
      const float* sc = scl + stage * SC;  // x_scale of tile row r at r, w_scale of n8 tile q at BM + q
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        const float x0 = sc[i * 16 + g], x1 = sc[i * 16 + g + 8];
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const float w = sc[BM + warp_n * NT + j];
          acc[i][j][0] += blk[i][j][0] * (x0 * w);
          acc[i][j][1] += blk[i][j][1] * (x0 * w);
          acc[i][j][2] += blk[i][j][2] * (x1 * w);
          acc[i][j][3] += blk[i][j][3] * (x1 * w);
        }
      }
    };

    // STAGES-1 slices in flight while one is multiplied; every iteration commits a group (empty
    // past the end) so the wait counts stay exact.
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st < n) load(st, st > 0);
      cp_async_commit();
    }
    for (int it = 0; it < n; ++it) {
      cp_async_wait<STAGES - 2>();
      sync_threads();  // slice `it` visible to all; slice it-1's stage free for reuse
      if (it + STAGES - 1 < n) load((it + STAGES - 1) % STAGES, true);
      cp_async_commit();
      compute(it % STAGES);
    }
    cp_async_wait<0>();

    // Thread holds rows g (+8) of each m16 tile and columns 2t, 2t+1 of each n8 tile.
    const int col_base = UP ? nt * (BN / 2) + warp_n * (WN / 2) : nt * BN + warp_n * WN;
    constexpr int NOUT = UP ? NT / 2 : NT;
    if constexpr (FUSED) {
      // h = silu(gate) * up in fp32; the group's amax joins this thread's part with the 4 lanes
      // of each warp sharing the row through shared memory, then every thread codes its pairs.
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          float amax = 0.0f;
#pragma unroll
          for (int j = 0; j < NOUT; ++j)
#pragma unroll
            for (int c = 0; c < 2; ++c) {
              float& v = acc[i][j][hh * 2 + c];
              v = silu(v) * acc[i][j + NT / 2][hh * 2 + c];
              amax = fp8::amax_step(amax, v);
            }
          amax_part[(i * 16 + hh * 8 + g) * WARPS_N * 4 + warp_n * 4 + t] = amax;
        }
      sync_threads();
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int lr = i * 16 + hh * 8 + g, r = row0 + lr;
          float amax = 0.0f;
          for (int q = 0; q < WARPS_N * 4; ++q) amax = fp8::amax_step(amax, amax_part[lr * WARPS_N * 4 + q]);
          const float scale = fp8::group_scale(amax, p.ue8m0);
          if (r >= row_end) continue;
          if (warp_n == 0 && t == 0) p.h_scale[static_cast<long long>(r) * (p.b.n_out / BK) + nt] = scale;
#pragma unroll
          for (int j = 0; j < NOUT; ++j) {
            const int col = col_base + j * 8 + t * 2;
            store_u16(p.h + static_cast<long long>(r) * p.b.n_out + col,
                      static_cast<std::uint16_t>(fp8::pack2(acc[i][j][hh * 2], acc[i][j][hh * 2 + 1], scale)));
          }
        }
    } else {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int r = row0 + i * 16 + g + hh * 8;
          if (r >= row_end) continue;
          const float rw = (!UP && p.b.row_weight != nullptr) ? load_plain(p.b.row_weight + r) : 1.0f;
#pragma unroll
          for (int j = 0; j < NOUT; ++j) {
            const int col = col_base + j * 8 + t * 2;
            if (col >= p.b.n_out) continue;
            const float v0 = acc[i][j][hh * 2], v1 = acc[i][j][hh * 2 + 1];
            if (UP || p.b.split > 1) {  // partials [split, rows, n_w]; unfused up: gate|up, split 1
              float* dst = p.b.partial + (static_cast<long long>(s) * p.b.rows + r) * p.b.n_w;
              store_f32x2(dst + col, v0, v1);
              if constexpr (UP) store_f32x2(dst + p.b.n_out + col, acc[i][j + NT / 2][hh * 2], acc[i][j + NT / 2][hh * 2 + 1]);
            } else {
              store_u32(p.b.out + static_cast<long long>(r) * p.b.n_out + col, pack2<true>(v0 * rw, v1 * rw));
            }
          }
        }
    }
    // The next tile's loads overwrite the stages (and the amax parts); a 16-row down may fold
    // combine (counted here).
    if constexpr (UP || BM != 16) sync_threads();
    else end_down_tile(p.b, nt, total_m, fold_mine);
    tile += static_cast<int>(grid_x());
    if (!find_tile(tile)) break;
    weights_first(0, B_CHUNKS);
  }
  if constexpr (!UP && BM == 16) fold_tail<true, THREADS>(p.b, BN, fold_mine);
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
