#pragma once
// The deterministic aligner: per-expert counts, block-aligned offsets, and src/dst maps whose
// rows within an expert are in ascending slot order. No atomics decide an order: each warp
// walks a contiguous slot range and ranks its slots with __match_any_sync, and per-(warp,
// expert) prefix counts place the warps' runs one after another.
//   single: one CTA does it all in shared memory (decode: one launch).
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
__device__ void mark_padding(const Dev& a, const int* tot, const int* off, int warp, int nwarps) {
  const int lane = threadIdx.x & 31;
  for (int e = warp; e < a.local; e += nwarps) {
    const long long end = lmin(off[e + 1], a.rows);
    for (long long r = static_cast<long long>(off[e]) + tot[e] + lane; r < end; r += 32) a.src[r] = -1;
  }
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS) align_single_kernel(Dev a) {
  constexpr int NW = THREADS / 32;
  MOE_DYNAMIC_SMEM(int, smem);
  const int El = a.local;
  int* cnt = smem;               // [NW][El]: counts, then each warp's next row per expert
  int* tot = cnt + NW * El;      // [El]
  int* pad = tot + El;           // [El]
  int* off = pad + El;           // [El + 1]
  int* scratch = off + El + 1;   // [NW + 1]
  short* le = reinterpret_cast<short*>(scratch + NW + 1);  // [slots]
  const int tid = threadIdx.x, warp = tid >> 5;
  for (int i = tid; i < NW * El; i += THREADS) cnt[i] = 0;
  // ids are the router's output; only shared memory is touched before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  stage_ids<THREADS>(a, 0, a.slots, le);
  __syncthreads();
  const long long per = (a.slots + NW - 1) / NW;
  const long long s0 = lmin(a.slots, warp * per), s1 = lmin(a.slots, s0 + per);
  warp_count(le, 0, s0, s1, cnt + warp * El);
  __syncthreads();
  for (int e = tid; e < El; e += THREADS) {
    int run = 0;
    for (int w = 0; w < NW; ++w) {
      const int c = cnt[w * El + e];
      cnt[w * El + e] = run;
      run += c;
    }
    tot[e] = run;
    pad[e] = padded(run, a.A);
  }
  __syncthreads();
  block_exclusive_scan<THREADS>(pad, off, El, scratch);
  for (int e = tid; e <= El; e += THREADS) a.offsets[e] = off[e];
  for (int e = tid; e < El; e += THREADS)
    for (int w = 0; w < NW; ++w) cnt[w * El + e] += off[e];
  __syncthreads();
  warp_place(a, le, 0, s0, s1, cnt + warp * El);
  mark_padding(a, tot, off, warp, NW);
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
// a warp per expert), then offsets and the padding rows.
__global__ void __launch_bounds__(kScanThreads) align_scan_kernel(Dev a, int* hist, int ctas) {
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
