#pragma once
// The 4-bit decode kernel (docs/w4.md): bf16 activations and packed 4-bit weights (mxfp4 or
// int4, as the checkpoints store them) stream through a cp.async pipeline in 16-byte copies,
// the weights at half a byte per element. Fragments are read from shared memory, the codes
// turned into bf16 in registers (an e2m1 value, or q - z: exact in bf16) and multiplied by
// mma.sync m16n8k16 into per-group fp32 sums, which are then promoted into the accumulators
// times the group's scale of each weight row (e8m0 or bf16, exact in fp32).
//
// The order of the K elements inside a 32-wide chunk (one group or a part of one) is free, as
// long as A and B agree: lane t of a quad takes the chunk's elements 8t..8t+7, one 32-bit word
// of B (four bytes of codes) and one 16-byte load of each A row, and feeds elements 8t..8t+3 to
// the first k16 step (as its k = 2t,2t+1 and 2t+8,2t+9) and 8t+4..8t+7 to the second. So the
// checkpoint's byte order needs no reordering and every B fragment is one shared load.
// Epilogues: up silu(gate)*up, down the routed weight, both rounded once to bf16; with split-K
// each split writes fp32 partials that the bf16 kernel's finalize sums in split order. FN: the
// problem's expert function instead (expert_fn.cuh: w13's row order, bias13 and the clamped
// SwiGLU, bias2 before the routed weight, padding rows left zero), a separate instantiation so
// that the plain kernels' code is untouched by it.
#include <cstdint>

#include "gmm/mma/cuda_kernel.cuh"
#include "gmm/w4_mma/w4_mma_configs.hpp"
#include "gmm/w4_mma/w4_mma_primitives.cuh"

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

template <int BM, int BN, int BK, int WARPS_N, int STAGES, bool UP, bool MX, bool FN>
GMM_KERNEL(WARPS_N * 32) gmm_w4_mma_kernel(const w4_mma::Args p) {
  constexpr int THREADS = WARPS_N * 32;
  constexpr int WN = BN / WARPS_N, MT = BM / 16, NT = WN / 8;
  constexpr int A_ROW = w4_mma::a_row_bytes(BK), B_ROW = w4_mma::b_row_bytes(BK);
  constexpr int A_STAGE = BM * A_ROW, STAGE_BYTES = A_STAGE + BN * B_ROW;
  constexpr int A_CH = BK / 8, B_CH = BK / 32;  // 16-byte chunks of an A row, of a B row
  constexpr int A_ITERS = (BM * A_CH + THREADS - 1) / THREADS, B_ITERS = (BN * B_CH + THREADS - 1) / THREADS;
  constexpr int KC = BK / 32;  // 32-wide chunks per slice
  static_assert(BM % 16 == 0 && WN % 8 == 0 && BK % 32 == 0 && STAGES >= 2, "whole m16 x n8 tiles, k32 chunks");
  static_assert(!UP || (WN / 2) % 8 == 0, "up: each warp's gate and up halves are whole n8 tiles");

  unsigned char* smem = dynamic_smem();
  const int tid = thread_x(), lane = tid & 31, warp_n = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  // The tile map, the activations and the offsets are earlier kernels' outputs, and the
  // workspace's partials may still be read by the previous call's finalize: wait before all.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();

  const int K = p.b.k_dim, row_bytes = K / 2;
  // Weight row of shared B row r of N-tile nt (up: a warp's rows are its gate half, then the
  // matching up half, where w13's layout puts each h column's two rows). Up's tiles cover I
  // exactly (invalid_reason); down's may overhang D: rows past it read the last row and are
  // never stored.
  auto weight_row = [&](int nt, int r) {
    if constexpr (UP) {
      constexpr int HALF = WN / 2;
      const int rr = r % WN, hcol = nt * (BN / 2) + (r / WN) * HALF + rr % HALF;
      if constexpr (FN) {
        const int gate = fn_gate_row(p.b.fn, hcol);
        return rr < HALF ? gate : gate + p.b.fn.up_rows;
      }
      return rr < HALF ? hcol : p.b.n_out + hcol;
    } else {
      return min(nt * BN + r, p.b.n_out - 1);
    }
  };

  int total_m = p.b.map_tiles;
  DecodeTile u;
  bool first = true;
  for (int tile = static_cast<int>(block_x());; tile += static_cast<int>(grid_x()), first = false) {
    if (!find_decode_tile(p.b, tile, total_m, first, u)) break;
    const int kb0 = first_k_slice(p.b, u.s), n = p.b.k_per + (u.s < p.b.k_extra ? 1 : 0);
    const std::uint8_t* W = p.weight + static_cast<std::size_t>(static_cast<std::uint32_t>(u.e)) * p.expert_bytes;
    // Each thread's 16-byte copies of a stage: weights first (what a decode tile waits on).
    const std::uint8_t* b_src[B_ITERS];
    std::uint32_t b_dst[B_ITERS];
#pragma unroll
    for (int i = 0; i < B_ITERS; ++i) {
      const int idx = tid + i * THREADS, r = idx / B_CH, c = idx % B_CH;
      b_src[i] = W + static_cast<std::uint32_t>(weight_row(u.nt, min(r, BN - 1))) * static_cast<std::uint32_t>(row_bytes) +
                 static_cast<std::uint32_t>(kb0 * (BK / 2) + c * 16);
      b_dst[i] = smem_u32(smem + A_STAGE + min(r, BN - 1) * B_ROW + c * 16);
    }
    const std::uint16_t* a_src[A_ITERS];
    std::uint32_t a_dst[A_ITERS];
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) {
      const int idx = tid + i * THREADS, r = min(idx / A_CH, BM - 1), c = idx % A_CH;
      a_src[i] = p.b.act + static_cast<std::size_t>(min(u.row0 + r, u.row_end - 1)) * K + kb0 * BK + c * 8;
      a_dst[i] = smem_u32(smem + r * A_ROW + c * 16);
    }
    auto load = [&](int stage) {
      const std::uint32_t off = static_cast<std::uint32_t>(stage * STAGE_BYTES);
#pragma unroll
      for (int i = 0; i < B_ITERS; ++i) {
        if ((BN * B_CH) % THREADS == 0 || tid + i * THREADS < BN * B_CH) cp_async16(b_dst[i] + off, b_src[i], true);
        b_src[i] += BK / 2;
      }
#pragma unroll
      for (int i = 0; i < A_ITERS; ++i) {
        if ((BM * A_CH) % THREADS == 0 || tid + i * THREADS < BM * A_CH) cp_async16(a_dst[i] + off, a_src[i], true);
        a_src[i] += BK;
      }
    };

    // Per n8 tile j: the scales of this thread's two accumulator columns (2t, 2t+1) and the zero
    // point of its B row (g), each as the first entry of its weight row's groups.
    const std::size_t e_rows = static_cast<std::size_t>(u.e) * p.b.n_w;
    std::size_t sc_row[NT][2], z_row[NT];
    int z_shift[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int base = warp_n * WN + j * 8;
#pragma unroll
      for (int c = 0; c < 2; ++c) sc_row[j][c] = (e_rows + weight_row(u.nt, base + 2 * t + c)) * p.groups;
      const int zr = weight_row(u.nt, base + g);
      z_row[j] = (e_rows / 8 + static_cast<std::size_t>(zr / 8)) * p.groups;
      z_shift[j] = 4 * (zr % 8);
    }
    auto scale_of = [&](std::size_t at) {
      if constexpr (MX) return w4::e8m0_f32(load_plain(static_cast<const std::uint8_t*>(p.scale) + at));
      else return w4::bf16_f32(load_plain(static_cast<const std::uint16_t*>(p.scale) + at));
    };

    float acc[MT][NT][4], blk[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = blk[i][j][q] = 0.0f;

    // The group's sums times each column's scale, into the totals.
    auto promote = [&](int grp) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const float s0 = scale_of(sc_row[j][0] + grp), s1 = scale_of(sc_row[j][1] + grp);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          acc[i][j][0] += blk[i][j][0] * s0;
          acc[i][j][1] += blk[i][j][1] * s1;
          acc[i][j][2] += blk[i][j][2] * s0;
          acc[i][j][3] += blk[i][j][3] * s1;
#pragma unroll
          for (int q = 0; q < 4; ++q) blk[i][j][q] = 0.0f;
        }
      }
    };

    // Slice `slice` (of K, in this split) in stage `stage`; `last`: the split's last slice,
    // whose last chunk promotes even inside a group (a split may end mid-group).
    auto compute = [&](int stage, int slice, bool last) {
      const unsigned char* a_base = smem + stage * STAGE_BYTES + g * A_ROW + 16 * t;
      const unsigned char* b_base = smem + stage * STAGE_BYTES + A_STAGE + (warp_n * WN + g) * B_ROW + 4 * t;
#pragma unroll
      for (int kc = 0; kc < KC; ++kc) {
        const int chunk = slice * KC + kc, grp = chunk >> (p.group_mask == 0 ? 0 : 2);
        std::uint32_t af[MT][2][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const U32x4 lo = lds_u32x4(a_base + i * 16 * A_ROW + kc * 64);
          const U32x4 hi = lds_u32x4(a_base + (i * 16 + 8) * A_ROW + kc * 64);
          af[i][0][0] = lo.x, af[i][0][1] = hi.x, af[i][0][2] = lo.y, af[i][0][3] = hi.y;
          af[i][1][0] = lo.z, af[i][1][1] = hi.z, af[i][1][2] = lo.w, af[i][1][3] = hi.w;
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const std::uint32_t w = lds_w4(b_base + j * 8 * B_ROW + kc * 16);
          std::uint32_t b[4];
          if constexpr (MX) {
            w4::mxfp4x8(w, b);
          } else {
            const std::uint32_t z = p.zeros ? (load_plain(p.zeros + z_row[j] + grp) >> z_shift[j]) & 0xFu : 8u;
            w4::int4x8(w, ((0x4300u | z) * 0x10001u) | 0x80008000u, b);
          }
#pragma unroll
          for (int i = 0; i < MT; ++i) {
            mma16816<true>(blk[i][j], af[i][0], b[0], b[1]);
            mma16816<true>(blk[i][j], af[i][1], b[2], b[3]);
          }
        }
        if (((chunk + 1) & p.group_mask) == 0 || (last && kc == KC - 1)) promote(grp);
      }
    };

    // STAGES-1 slices in flight while one is multiplied; every iteration commits a group (empty
    // past the end) so the wait counts stay exact.
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st < n) load(st);
      cp_async_commit();
    }
    for (int it = 0; it < n; ++it) {
      cp_async_wait<STAGES - 2>();
      sync_threads();  // slice `it` visible to all; slice it-1's stage free for reuse
      if (it + STAGES - 1 < n) load((it + STAGES - 1) % STAGES);
      cp_async_commit();
      compute(it % STAGES, kb0 + it, it == n - 1);
    }
    cp_async_wait<0>();

    // Thread holds rows g (+8) of each m16 tile and columns 2t, 2t+1 of each n8 tile.
    const int col_base = UP ? u.nt * (BN / 2) + warp_n * (WN / 2) : u.nt * BN + warp_n * WN;
    constexpr int NOUT = UP ? NT / 2 : NT;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = u.row0 + i * 16 + g + hh * 8;
        if (r >= u.row_end) continue;
        const float rw = (!UP && p.b.row_weight != nullptr) ? load_plain(p.b.row_weight + r) : 1.0f;
        const bool pad = FN && p.b.split == 1 && fn_pad_row(p.b.fn, r);
#pragma unroll
        for (int j = 0; j < NOUT; ++j) {
          const int col = col_base + j * 8 + t * 2;
          if (col >= p.b.n_out) continue;
          float v0 = acc[i][j][hh * 2], v1 = acc[i][j][hh * 2 + 1];
          if (p.b.split > 1) {  // partials [split, rows, n_w]: up's gate|up, down's sums
            float* dst = p.b.partial + (static_cast<std::size_t>(u.s) * p.b.rows + r) * p.b.n_w;
            store_f32x2(dst + col, v0, v1);
            if constexpr (UP) store_f32x2(dst + p.b.n_out + col, acc[i][j + NT / 2][hh * 2], acc[i][j + NT / 2][hh * 2 + 1]);
          } else {
            float u0 = 0.0f, u1 = 0.0f;
            if constexpr (UP) u0 = acc[i][j + NT / 2][hh * 2], u1 = acc[i][j + NT / 2][hh * 2 + 1];
            epilogue_pair<UP, true, FN>(p.b.fn, u.e, col, pad, rw, v0, v1, u0, u1);
            store_u32(p.b.out + static_cast<std::size_t>(r) * p.b.n_out + col, pack2<true>(v0, v1));
          }
        }
      }
    sync_threads();  // the next tile's loads overwrite the stages
  }
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
