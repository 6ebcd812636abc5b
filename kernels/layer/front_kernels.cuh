#pragma once
// The decode front: router -> aligner -> gather for a batch of at most kMaxTokens tokens in one
// kernel. Each CTA routes every row with the router's row code (router/cuda_row.hpp) into shared
// memory, aligns the slots with the single-CTA aligner's body (dispatch/cuda_align_kernels.cuh),
// and gathers its share of the rows with dispatch's row copy or fp8 quantizer, so the results are
// the stages' own. CTA 0 writes weights, ids, offsets, src and dst; the others keep their copies
// in shared memory (the aligner skips src when it is null). Written once against a Lane
// (cuda_row.hpp): the device kernel (cuda_front.cu) and the emulator (front_emu.cpp) share it.
#include "common/cuda_l2_prefetch.cuh"
#include "dispatch/cuda_align_kernels.cuh"
#include "dispatch/cuda_gather_fp8_kernels.cuh"
#include "dispatch/cuda_gather_kernels.cuh"
#include "layer/front_launch.hpp"
#include "router/cuda_row.hpp"

namespace moe::layer_front {

namespace {

// Whether row r (< offsets[local]) is a padding row: past its expert's routed rows. The last
// expert whose offset is at most r holds it (empty experts share their successor's offset).
__device__ __forceinline__ bool is_padding(const int* off, const int* tot, int local, long long r) {
  int lo = 0, hi = local;  // off[lo] <= r < off[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (off[mid] <= r) lo = mid;
    else hi = mid;
  }
  return r - off[lo] >= tot[lo];
}

// The tile map gmm's schedule kernel would write from these offsets (cuda_tile_map.cuh): entry mg
// is {expert, first row, end row, M-tiles} of the mg-th M-tile of bm rows, expert -1 past the
// last, then the status entry {0, M-tiles, 0, 0} (the aligner's offsets are sound; more M-tiles
// than the map holds, which sound offsets never make, would be reported as the schedule kernel
// does). Every thread of the CTA calls it; `tiles` (El ints) and `prefix` (El + 1) are shared
// scratch, `scratch` the scan's.
__device__ void write_tile_map(const int* off, int El, long long rows, int bm, int map_tiles, int* map, int* tiles,
                               int* prefix, int* scratch) {
  const int tid = threadIdx.x;
  const long long R = rows;
  auto begin = [&](int e) { return static_cast<int>(off[e] < 0 ? 0 : off[e] > R ? R : off[e]); };
  auto end = [&](int e) {
    const int b = begin(e), n = static_cast<int>(off[e + 1] > R ? R : off[e + 1]);
    return n > b ? n : b;
  };
  for (int e = tid; e < El; e += kThreads) tiles[e] = (end(e) - begin(e) + bm - 1) / bm;
  __syncthreads();
  dispatch_cuda::align_kernels::block_exclusive_scan<kThreads>(tiles, prefix, El, scratch);
  const int asked = prefix[El], total = asked < map_tiles ? asked : map_tiles;
  for (int mg = tid; mg < map_tiles; mg += kThreads) {
    int e = -1, row0 = 0, row_end = 0;
    if (mg < total) {
      int lo = 0, hi = El;  // prefix[lo] <= mg < prefix[hi]
      while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (prefix[mid] <= mg) lo = mid;
        else hi = mid;
      }
      e = lo;
      row0 = begin(e) + (mg - prefix[e]) * bm;
      row_end = end(e);
    }
    int* q = map + 4 * static_cast<long long>(mg);
    q[0] = e, q[1] = row0, q[2] = row_end, q[3] = total;
  }
  if (tid == 0) {
    int* q = map + 4 * static_cast<long long>(map_tiles);
    q[0] = asked > map_tiles, q[1] = asked, q[2] = 0, q[3] = 0;
  }
  __syncthreads();  // the scratch is the next map's
}

// l2_prefetch: once routed, the active experts' weights go toward L2, so their stream starts while
// up's kernel is still being launched and fills its first tiles. Each active expert gets an even
// share of the budget (all of L2 would evict what the share before it brought), w13 first, then
// w2. The grid's threads take (slot, piece) pairs in turn; a slot sends only for the expert whose
// first routed row it holds (dst[s] == off[e]: routed rows open their segment), so every active
// expert is sent once. `count` is a shared int, zeroed before the routing's barriers.
__device__ void prefetch_weights(const Args& f, const int* ids, const int* dst, const int* off, int slots,
                                 int* count) {
  const int tid = threadIdx.x;
  auto holds_first_row = [&](int s) {
    const int e = ids[s] - f.e0;
    return e >= 0 && e < f.local && dst[s] >= 0 && dst[s] == off[e];
  };
  for (int s = tid; s < slots; s += kThreads)
    if (holds_first_row(s)) atomicAdd(count, 1);
  __syncthreads();
  const long long active = *count;
  if (active == 0) return;
  const long long share = f.budget / active / 16 * 16;
  const long long cap0 = f.w[0] ? (share < f.w_bytes[0] ? share : f.w_bytes[0]) : 0;
  const long long left = share - cap0;
  const long long cap1 = f.w[1] ? (left < f.w_bytes[1] ? left : f.w_bytes[1]) : 0;
  const long long n0 = (cap0 + kPrefetchPiece - 1) / kPrefetchPiece, per = n0 + (cap1 + kPrefetchPiece - 1) / kPrefetchPiece;
  const long long all = static_cast<long long>(gridDim.x) * kThreads;
  for (long long p = static_cast<long long>(blockIdx.x) * kThreads + tid; p < slots * per; p += all) {
    const int s = static_cast<int>(p / per);
    if (!holds_first_row(s)) continue;
    const int j = p % per < n0 ? 0 : 1;
    const long long at = (p % per - (j ? n0 : 0)) * kPrefetchPiece, cap = j ? cap1 : cap0;
    const long long n = cap - at < kPrefetchPiece ? cap - at : kPrefetchPiece;
    MOE_PREFETCH_L2(f.w[j] + (ids[s] - f.e0) * f.w_bytes[j] + at, static_cast<std::uint32_t>(n));
  }
}

template <int LANES, int EPL, int V, class Lane>
__device__ void front_body(const Args& f, Lane& ln, int* smem) {
  constexpr int NW = kThreads / 32;
  namespace ak = dispatch_cuda::align_kernels;
  const int El = f.local, slots = static_cast<int>(f.route.T) * f.K;
  const ak::SingleSmem m = ak::single_smem(smem, NW, El, slots);
  // After the aligner's part (its scratch ends it), as smem_ints lays it out.
  int* ids = smem + round4(m.scratch + NW + 1 - smem);
  float* weights = reinterpret_cast<float*>(ids + round4(slots));
  int* dst = reinterpret_cast<int*>(weights + round4(slots));
  int* offsets = dst + round4(slots);
  int* active = offsets + round4(El + 1);
  ak::single_clear<kThreads>(m, El);
  if (threadIdx.x == 0) *active = 0;
  // logits and x may be the previous layer's output: nothing global is read before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  router::kern::Args ra = f.route;
  ra.weights = weights;
  ra.ids = ids;
  router::kern::RowKernel<LANES, EPL, V, 2>::rows(ra, ln, warp, NW);
  __syncthreads();
  const ak::Dev d{ids, slots, f.e0, El, f.E_total, f.A, offsets, blockIdx.x == 0 ? f.src : nullptr, dst, f.rows};
  ak::single_align<kThreads>(d, m);
  __syncthreads();
  if (f.w[0] || f.w[1]) prefetch_weights(f, ids, dst, m.off, slots, active);
  if (blockIdx.x == 0) {
    for (int i = tid; i < slots; i += kThreads) f.ids[i] = ids[i], f.weights[i] = weights[i], f.dst[i] = dst[i];
    for (int e = tid; e <= El; e += kThreads) f.offsets[e] = offsets[e];
    for (int i = tid; i < f.zero_n; i += kThreads) f.zero[i] = 0;
    // The aligner is done with its counts and padded sizes: they are the maps' scratch.
    for (int j = 0; j < 2; ++j)
      if (f.map[j]) write_tile_map(m.off, El, f.rows, f.map_bm[j], f.map_tiles[j], f.map[j], m.pad, m.cnt, m.scratch);
  }
  // The rows: the routed ones by slot (dst), the padding ones by row; warps over the whole grid.
  const long long gw = static_cast<long long>(blockIdx.x) * NW + warp, nw = static_cast<long long>(gridDim.x) * NW;
  const long long used = m.off[El] < f.rows ? m.off[El] : f.rows;
  if (!f.fp8) {
    namespace gk = dispatch_cuda::gather_kernels;
    const long long units = f.row_bytes / 16;
    const auto* x = static_cast<const uint4*>(f.x);
    auto* xs = static_cast<uint4*>(f.x_sorted);
    for (long long s = gw; s < slots; s += nw) {
      const int row = dst[s];
      if (row >= 0) gk::copy_row<uint4, 4>(x + s / f.K * units, xs + row * units, units, lane, 32);
    }
    for (long long r = gw; r < used; r += nw)
      if (is_padding(m.off, m.tot, El, r)) gk::zero_row(xs + r * units, units, lane, 32);
    return;
  }
  namespace qk = dispatch_cuda::gather_fp8_kernels;
  const qk::QDev q{static_cast<const std::uint16_t*>(f.x), nullptr, static_cast<std::uint8_t*>(f.x_sorted), f.x_scale,
                   f.rows, slots, f.K, f.D, nullptr, f.ue8m0 != 0};
  const long long ch = qk::quant_chunks(f.D);
  for (long long i = gw; i < slots * ch; i += nw) {
    const int row = dst[i / ch];
    if (row >= 0) qk::quant_row_chunk(q, row, i % ch, static_cast<int>(i / ch));
  }
  for (long long i = gw; i < used * ch; i += nw)
    if (is_padding(m.off, m.tot, El, i / ch)) qk::quant_row_chunk(q, i / ch, i % ch, -1);
}

}  // namespace

}  // namespace moe::layer_front
