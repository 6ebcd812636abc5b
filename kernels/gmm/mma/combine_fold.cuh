#pragma once
// Combine folded into gmm down (KernelArgs::fold, the layer's decode path): each CTA counts the
// down tiles it finishes per N-tile, and the one finishing an N-tile's last tile (of all its
// M-tiles and splits) sums every token's rows of those columns exactly as the combine stage
// does: the selected slots in slot order, one fmaf each, rounded once to the output dtype
// (split-K's partials first summed in split order and rounded as the finalize rounds them). The
// result does not depend on which CTA finishes last, and no float atomics are used. Included by
// cuda_kernel.cuh, in its namespace and over the same primitives.

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

// What the fold reads of KernelArgs. Built from its fields where the fold is inlined: taken as one
// struct by an out-of-line walk, it went through local memory.
struct FoldView {
  const std::int32_t* dst;
  const float* weights;
  std::uint16_t* fold_out;
  const std::uint16_t* out;
  const float* partial;
  int tokens, slots, rows, split, n_w, n_out;
};

// Columns [c0, c0 + cols) of fold_out for every token, by the block's threads.
template <bool BF16, int THREADS>
GMM_DEVICE void fold_columns(const FoldView& p, int c0, int cols) {
  const int pairs = cols / 2, items = p.tokens * pairs, K = p.slots;
  for (int it = thread_x(); it < items; it += THREADS) {
    const int t = it / pairs, col = c0 + 2 * (it - t * pairs);
    float a0 = 0.0f, a1 = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int f = t * K + k, row = load_plain(p.dst + f);
      const float w = load_plain(p.weights + f);
      if (row < 0 || row >= p.rows || w == 0.0f) continue;  // combine's selection
      std::uint32_t y;
      if (p.split > 1) {
        float y0 = 0.0f, y1 = 0.0f;
        for (int s = 0; s < p.split; ++s) {
          float a, b;
          load_cg_f32x2(p.partial + (static_cast<std::size_t>(s) * p.rows + row) * p.n_w + col, a, b);
          y0 += a;
          y1 += b;
        }
        y = pack2<BF16>(y0, y1);  // what the finalize would have stored (no routed weight: fold_invalid_reason)
      } else {
        y = load_cg_u32(p.out + static_cast<std::size_t>(row) * p.n_out + col);
      }
      a0 = fmaf(w, to_f32<BF16>(static_cast<std::uint16_t>(y & 0xffffu)), a0);
      a1 = fmaf(w, to_f32<BF16>(static_cast<std::uint16_t>(y >> 16)), a1);
    }
    store_u32(p.fold_out + static_cast<std::size_t>(t) * p.n_out + col, pack2<BF16>(a0, a1));
  }
}

// The end of a down tile of N-tile nt: the barrier before the next tile's loads overwrite shared
// memory, then, with a fold, the count. Thread nt / 32 counts N-tile nt and keeps, in `mine`, the
// bit of each N-tile whose last tile (of total_m M-tiles x split) this CTA finished: the fold
// itself waits for the end of the CTA's walk (fold_tail), so that its code and registers stay out
// of the tile loop. The fence after the barrier makes the CTA's stores of the tile visible
// device-wide before its count (a release, as split-K semaphores do it).
GMM_DEVICE void end_down_tile(const KernelArgs& p, int nt, int total_m, std::uint32_t& mine) {
  sync_threads();
  if (p.fold.done == nullptr || thread_x() != static_cast<unsigned>(nt >> 5)) return;
  fence_gpu();
  if (atomic_add(p.fold.done + nt, 1) == total_m * p.split - 1) mine |= 1u << (nt & 31);
}

// After the walk: the N-tiles this CTA finished last, folded, bn columns each. Shared memory is
// free by then (no copy is in flight past the last tile's barrier); the owners' bit words are
// gathered there for every thread to walk. Only the 16-row decode tiles of the mma and fp8
// kernels carry it: in the other tiles and in the 4-bit kernel its code changed the register
// allocation and the schedule of the tile loop above it (spills and longer k-loops in the static
// report), and out of line it did so everywhere.
template <bool BF16, int THREADS>
GMM_DEVICE void fold_walk(const FoldView& v, int n_tiles, int bn, std::uint32_t mine) {
  auto* words = reinterpret_cast<std::uint32_t*>(dynamic_smem());
  const int n_words = (n_tiles + 31) / 32;  // at most THREADS (bind_fold)
  if (thread_x() < static_cast<unsigned>(n_words)) words[thread_x()] = mine;
  sync_threads();
  fence_gpu();  // the other CTAs' tiles, counted before ours, are read after the count
  for (int w = 0; w < n_words; ++w) {
    const std::uint32_t m = words[w];
    for (int b = 0; b < 32; ++b)
      if ((m >> b) & 1u) {
        const int nt = w * 32 + b;
        fold_columns<BF16, THREADS>(v, nt * bn, min(bn, v.n_out - nt * bn));
      }
  }
}
template <bool BF16, int THREADS>
GMM_DEVICE void fold_tail(const KernelArgs& p, int bn, std::uint32_t mine) {
  if (p.fold.done == nullptr) return;
  const FoldView v{p.fold.dst, p.fold.weights, p.fold.out, p.out, p.partial, p.fold.tokens, p.fold.slots,
                   p.rows, p.split, p.n_w, p.n_out};
  fold_walk<BF16, THREADS>(v, p.n_tiles, bn, mine);
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
