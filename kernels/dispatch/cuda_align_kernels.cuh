#pragma once
// The deterministic aligner: per-expert counts, block-aligned offsets, and src/dst maps whose
// rows within an expert are in ascending slot order. No atomics decide an order: each warp
// walks a contiguous slot range and ranks its slots with __match_any_sync, and per-(warp,
// expert) prefix counts place the warps' runs one after another.
//   single: one CTA does it all in shared memory (decode: one launch). Its ranking pass keeps
//           each slot's rank among its warp's slots of the same expert, so placing a slot is
//           a few loads and two stores, with no second ranking.
//   multi:  hist (per-CTA counts) -> scan (one CTA) -> scatter (per-CTA stable placement).
// Device code only, so tests/kernels/dispatch/dispatch_emulation_test.cpp can run it on the cpu; the launchers
// are in cuda_align.cu. Internal linkage: each includer gets its own copy.
#include "common/cuda_pdl.cuh"
#include "common/cuda_smem.cuh"
#include "dispatch/cuda_launch.hpp"

namespace moe::dispatch_cuda::align_kernels {

namespace {

constexpr unsigned kFull = 0xffffffffu;

struct Dev {
  const int* ids;
  long long slots;
  int e0, local, E_total, A;
  int* offsets;
  int* src;
  int* dst;
  long long rows;
};

__device__ __forceinline__ long long lmin(long long a, long long b) { return a < b ? a : b; }

// Local expert of slot f, or -1 when f is past the range end or the id is not local
// (out-of-range ids included: they are never used as an index).
__device__ __forceinline__ int local_of(const Dev& a, long long f, long long end) {
  if (f >= end) return -1;
  const int id = a.ids[f];
  return (id >= a.e0 && id < a.E_total && id - a.e0 < a.local) ? id - a.e0 : -1;
}

__device__ __forceinline__ int warp_inclusive_scan(int v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int n = __shfl_up_sync(kFull, v, o);
    if (lane >= o) v += n;
  }
  return v;
}

__device__ __forceinline__ int padded(int n, int A) { return (n + A - 1) / A * A; }

// Local expert ids of the slots [s0, s1) into shared memory: one coalesced sweep with many
// loads in flight, so the warp passes below never wait on global memory.
template <int THREADS>
__device__ void stage_ids(const Dev& a, long long s0, long long s1, short* le) {
  constexpr int kBatch = 8;  // loads issued back to back before any store
  for (long long f0 = s0 + threadIdx.x; f0 < s1; f0 += static_cast<long long>(THREADS) * kBatch) {
    int v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) v[u] = local_of(a, f0 + static_cast<long long>(u) * THREADS, s1);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const long long f = f0 + static_cast<long long>(u) * THREADS;
      if (f < s1) le[f - s0] = static_cast<short>(v[u]);
    }
  }
}

// This warp's count per expert over the slots [s0, s1); le holds the staged ids from slot
// `base` on; cnt is the warp's own row.
__device__ void warp_count(const short* le, long long base, long long s0, long long s1, int* cnt) {
  const int lane = threadIdx.x & 31;
  for (long long b = s0; b < s1; b += 32) {
    const long long f = b + lane;
    const int e = f < s1 ? le[f - base] : -1;
    const unsigned peers = __match_any_sync(kFull, e);
    if (e >= 0 && lane == __ffs(peers) - 1) cnt[e] += __popc(peers);
    __syncwarp();  // the next round's leader of e may be another lane: make the sum visible
  }
}

// Replays [s0, s1): each routed slot takes its expert's next row, lanes of one expert in lane
// order. next is the warp's own row of next-row-per-expert.
__device__ void warp_place(const Dev& a, const short* le, long long base, long long s0, long long s1, int* next) {
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  for (long long b = s0; b < s1; b += 32) {
    const long long f = b + lane;
    const int e = f < s1 ? le[f - base] : -1;
    const unsigned peers = __match_any_sync(kFull, e);
    if (e >= 0) {
      const long long row = static_cast<long long>(next[e]) + __popc(peers & below);
      const bool ok = row >= 0 && row < a.rows;  // only a mis-sized output (or broken counts) fails this
      a.dst[f] = ok ? static_cast<int>(row) : -1;
      if (ok) a.src[row] = static_cast<int>(f);
    } else if (f < s1) {
      a.dst[f] = -1;
    }
    __syncwarp();
    if (e >= 0 && lane == __ffs(peers) - 1) next[e] += __popc(peers);
    __syncwarp();
  }
}

// Exclusive scan of in[0, n) into out[0, n], out[n] = total; scratch holds THREADS/32 + 1 ints.
template <int THREADS>
__device__ void block_exclusive_scan(const int* in, int* out, int n, int* scratch) {
  constexpr int NW = THREADS / 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int per = (n + THREADS - 1) / THREADS;
  const int b = min(n, tid * per), e = min(n, b + per);
  int local = 0;
  for (int i = b; i < e; ++i) local += in[i];
  const int incl = warp_inclusive_scan(local);
  if (lane == 31) scratch[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int v = lane < NW ? scratch[lane] : 0;
    const int vi = warp_inclusive_scan(v);
    if (lane < NW) scratch[lane] = vi - v;
    if (lane == 31) scratch[NW] = vi;
  }
  __syncthreads();
  int run = scratch[warp] + incl - local;
  for (int i = b; i < e; ++i) {
    out[i] = run;
    run += in[i];
  }
  if (tid == 0) out[n] = scratch[NW];
  __syncthreads();
}

// src = -1 on each expert's padding rows [off[e] + tot[e], off[e+1]), one warp per expert.
// A null src (the decode front's CTAs past the first, which keep only dst) marks nothing.
__device__ void mark_padding(const Dev& a, const int* tot, const int* off, int warp, int nwarps) {
  const int lane = threadIdx.x & 31;
  if (!a.src) return;
  for (int e = warp; e < a.local; e += nwarps) {
    const long long end = lmin(off[e + 1], a.rows);
    for (long long r = static_cast<long long>(off[e]) + tot[e] + lane; r < end; r += 32) a.src[r] = -1;
  }
}

// The single-CTA aligner: slot counts fit in int (kSingleMaxSlots), and each slot's entry in
// shared memory is its local expert (or -1), which the ranking pass turns into
// expert | rank << 16 (a warp ranks at most kSingleMaxSlots / 16 slots: the rank fits in 15 bits).
constexpr int kExpertBits = 16;

// Local expert ids of slots [0, padded) into le (16-byte aligned), -1 past `slots`: four ids a
// load where the ids are 16-byte aligned. One unsigned compare per id: an id below e0 wraps
// past the limit.
template <int THREADS>
__device__ void stage_local(const Dev& a, int slots, int padded, int* le) {
  const int hi = a.E_total - a.e0 < a.local ? a.E_total - a.e0 : a.local;
  const unsigned lim = hi > 0 ? static_cast<unsigned>(hi) : 0u, e0 = static_cast<unsigned>(a.e0);
  int f = 0;
  if ((reinterpret_cast<unsigned long long>(a.ids) & 15u) == 0) {
    const int whole = slots & ~3;
#pragma unroll 1
    for (int i = threadIdx.x * 4; i < whole; i += THREADS * 4) {  // per-slot loop: 4 slots a lane
      const int4 v = *(reinterpret_cast<const int4*>(a.ids + i));
      int4 e;
      e.x = static_cast<unsigned>(v.x) - e0 < lim ? static_cast<int>(static_cast<unsigned>(v.x) - e0) : -1;
      e.y = static_cast<unsigned>(v.y) - e0 < lim ? static_cast<int>(static_cast<unsigned>(v.y) - e0) : -1;
      e.z = static_cast<unsigned>(v.z) - e0 < lim ? static_cast<int>(static_cast<unsigned>(v.z) - e0) : -1;
      e.w = static_cast<unsigned>(v.w) - e0 < lim ? static_cast<int>(static_cast<unsigned>(v.w) - e0) : -1;
      *reinterpret_cast<int4*>(le + i) = e;
    }
    f = whole;
  }
  for (int i = f + threadIdx.x; i < padded; i += THREADS) {
    const unsigned e = i < slots ? static_cast<unsigned>(a.ids[i]) - e0 : lim;
    le[i] = e < lim ? static_cast<int>(e) : -1;
  }
}

// The warp's slots [s0, s1) (whole rounds of 32): cnt[e] counts this warp's slots of expert e,
// and each routed entry becomes expert | rank << kExpertBits, its rank among them in slot order.
__device__ void warp_rank(int* le, int s0, int s1, int* cnt) {
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
#pragma unroll 1
  for (int f = s0 + lane; f < s1; f += 32) {  // per-slot loop: 1 slot a lane
    const int e = le[f];
    const unsigned peers = __match_any_sync(kFull, e);
    const int before = e >= 0 ? cnt[e] : 0;
    __syncwarp();  // every lane has read the count before its leader moves it
    if (e >= 0) {
      const unsigned mine = peers & below;
      if (mine == 0) cnt[e] = before + __popc(peers);
      le[f] = e | (before + __popc(mine)) << kExpertBits;
    }
    __syncwarp();  // the next round's leader of e may be another lane: make the sum visible
  }
}

// Each routed slot of [s0, s1) to its row: the warp's first row of its expert (next) plus its
// rank; dst = -1 for the others. A null src: dst only.
__device__ void warp_place_ranked(const Dev& a, const int* le, int s0, int s1, const int* next) {
  const int lane = threadIdx.x & 31;
  const int rows = a.rows < 0x7fffffff ? static_cast<int>(a.rows) : 0x7fffffff;
#pragma unroll 1
  for (int f = s0 + lane; f < s1; f += 32) {  // per-slot loop: 1 slot a lane
    const int v = le[f];
    int row = -1;
    if (v >= 0) {
      row = next[v & ((1 << kExpertBits) - 1)] + (v >> kExpertBits);
      if (row >= rows) row = -1;  // only a mis-sized output (or broken counts) fails this
      else if (a.src) a.src[row] = f;
    }
    a.dst[f] = row;
  }
}

// The single-CTA aligner's shared memory, carved from `smem` for NW warps, El local experts and
// `slots` slots (single_smem_bytes says how much).
struct SingleSmem {
  int per;       // slots per warp
  int* le;       // [NW * per], first: 16-byte aligned for the staging stores
  int* cnt;      // [NW][El]: counts, then each warp's first row per expert
  int* tot;      // [El]: routed rows per expert
  int* pad;      // [El]
  int* off;      // [El + 1]: the offsets
  int* scratch;  // [NW + 1]
};
__device__ __forceinline__ SingleSmem single_smem(int* smem, int NW, int El, int slots) {
  SingleSmem m;
  m.per = static_cast<int>(single_slots_per_warp(NW, slots));
  m.le = smem;
  m.cnt = m.le + NW * m.per;
  m.tot = m.cnt + NW * El;
  m.pad = m.tot + El;
  m.off = m.pad + El;
  m.scratch = m.off + El + 1;
  return m;
}

// The counts to zero: shared memory only, so a kernel may do it before its dependency wait.
template <int THREADS>
__device__ void single_clear(const SingleSmem& m, int El) {
  for (int i = threadIdx.x; i < THREADS / 32 * El; i += THREADS) m.cnt[i] = 0;
}

// The single-CTA aligner's body after single_clear: the maps and offsets of a.ids' slots. On
// return m.off and m.tot hold the offsets and each expert's routed rows (the decode front reads
// them); the last writes (dst, src, padding) are not yet synchronised across the CTA.
template <int THREADS>
__device__ void single_align(const Dev& a, const SingleSmem& m) {
  constexpr int NW = THREADS / 32;
  const int El = a.local;
  const int slots = static_cast<int>(a.slots);  // at most kSingleMaxSlots
  int* const cnt = m.cnt;
  const int tid = threadIdx.x, warp = tid >> 5;
  stage_local<THREADS>(a, slots, NW * m.per, m.le);
  __syncthreads();
  const int s0 = warp * m.per, s1 = s0 + m.per;
  warp_rank(m.le, s0, s1, cnt + warp * El);
  __syncthreads();
  for (int e = tid; e < El; e += THREADS) {
    int run = 0;
    for (int w = 0; w < NW; ++w) {
      const int c = cnt[w * El + e];
      cnt[w * El + e] = run;
      run += c;
    }
    m.tot[e] = run;
    m.pad[e] = padded(run, a.A);
  }
  __syncthreads();
  block_exclusive_scan<THREADS>(m.pad, m.off, El, m.scratch);
  for (int e = tid; e <= El; e += THREADS) a.offsets[e] = m.off[e];
  for (int e = tid; e < El; e += THREADS)
    for (int w = 0; w < NW; ++w) cnt[w * El + e] += m.off[e];
  __syncthreads();
  warp_place_ranked(a, m.le, s0, s1 < slots ? s1 : slots, cnt + warp * El);
  mark_padding(a, m.tot, m.off, warp, NW);
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS) align_single_kernel(Dev a) {
  MOE_DYNAMIC_SMEM(int, smem);
  const SingleSmem m = single_smem(smem, THREADS / 32, a.local, static_cast<int>(a.slots));
  single_clear<THREADS>(m, a.local);
  // ids are the router's output; only shared memory is touched before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  single_align<THREADS>(a, m);
}

// hist[e * ctas + b] = routed slots of expert e in CTA b's range.
template <int THREADS>
__global__ void __launch_bounds__(THREADS) align_hist_kernel(Dev a, int chunk, int* hist, int ctas) {
  MOE_DYNAMIC_SMEM(int, smem);
  int* cnt = smem;                                  // [El]
  short* le = reinterpret_cast<short*>(cnt + a.local);  // [chunk]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long s0 = static_cast<long long>(blockIdx.x) * chunk, s1 = lmin(a.slots, s0 + chunk);
  for (int e = tid; e < a.local; e += THREADS) cnt[e] = 0;
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  stage_ids<THREADS>(a, s0, s1, le);
  __syncthreads();
  for (long long base = s0 + warp * 32; base < s1; base += THREADS) {
    const long long f = base + lane;
    const int e = f < s1 ? le[f - s0] : -1;
    const unsigned peers = __match_any_sync(kFull, e);
    // Counts commute, so shared atomics keep the result deterministic.
    if (e >= 0 && lane == __ffs(peers) - 1) atomicAdd(&cnt[e], __popc(peers));
  }
  __syncthreads();
  for (int e = tid; e < a.local; e += THREADS) hist[static_cast<long long>(e) * ctas + blockIdx.x] = cnt[e];
}

// One CTA: hist becomes each CTA's first row within its expert (exclusive scan over CTAs,
// a warp per expert), then offsets and the padding rows. A template (one instantiation,
// kScanThreads) so that a unit including this header for its device functions (the layer's
// decode front) does not compile a copy of it.
template <int SCAN_THREADS = kScanThreads>
__global__ void __launch_bounds__(SCAN_THREADS) align_scan_kernel(Dev a, int* hist, int ctas) {
  static_assert(SCAN_THREADS == kScanThreads, "the scan's shared memory is sized for kScanThreads");
  constexpr int NW = kScanThreads / 32;
  MOE_DYNAMIC_SMEM(int, smem);
  const int El = a.local;
  int* tot = smem;
  int* pad = tot + El;
  int* off = pad + El;
  int* scratch = off + El + 1;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Each warp scans kE experts side by side, so their loads overlap.
  constexpr int kE = 4;
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  for (int e0 = warp; e0 < El; e0 += NW * kE) {
    int run[kE] = {};
    for (int b0 = 0; b0 < ctas; b0 += 32) {
      const int b = b0 + lane;
      int c[kE];
#pragma unroll
      for (int i = 0; i < kE; ++i) {
        const int e = e0 + i * NW;
        c[i] = b < ctas && e < El ? hist[static_cast<long long>(e) * ctas + b] : 0;
      }
#pragma unroll
      for (int i = 0; i < kE; ++i) {
        const int e = e0 + i * NW;
        const int incl = warp_inclusive_scan(c[i]);
        if (b < ctas && e < El) hist[static_cast<long long>(e) * ctas + b] = run[i] + incl - c[i];
        run[i] += __shfl_sync(kFull, incl, 31);
      }
    }
#pragma unroll
    for (int i = 0; i < kE; ++i) {
      const int e = e0 + i * NW;
      if (lane == 0 && e < El) {
        tot[e] = run[i];
        pad[e] = padded(run[i], a.A);
      }
    }
  }
  __syncthreads();
  block_exclusive_scan<kScanThreads>(pad, off, El, scratch);
  for (int e = tid; e <= El; e += kScanThreads) a.offsets[e] = off[e];
  mark_padding(a, tot, off, warp, NW);
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS) align_scatter_kernel(Dev a, int chunk, const int* hist, int ctas) {
  constexpr int NW = THREADS / 32;
  MOE_DYNAMIC_SMEM(int, smem);
  const int El = a.local;
  int* cnt = smem;                                      // [NW][El]
  short* le = reinterpret_cast<short*>(cnt + NW * El);  // [chunk]
  const int tid = threadIdx.x, warp = tid >> 5;
  const long long c0 = static_cast<long long>(blockIdx.x) * chunk, c1 = lmin(a.slots, c0 + chunk);
  for (int i = tid; i < NW * El; i += THREADS) cnt[i] = 0;
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  stage_ids<THREADS>(a, c0, c1, le);
  __syncthreads();
  const long long per = (c1 - c0 + NW - 1) / NW;
  const long long s0 = lmin(c1, c0 + warp * per), s1 = lmin(c1, s0 + per);
  warp_count(le, c0, s0, s1, cnt + warp * El);
  __syncthreads();
  for (int e = tid; e < El; e += THREADS) {
    int run = a.offsets[e] + hist[static_cast<long long>(e) * ctas + blockIdx.x];
    for (int w = 0; w < NW; ++w) {
      const int c = cnt[w * El + e];
      cnt[w * El + e] = run;
      run += c;
    }
  }
  __syncthreads();
  warp_place(a, le, c0, s0, s1, cnt + warp * El);
}

}  // namespace

}  // namespace moe::dispatch_cuda::align_kernels
