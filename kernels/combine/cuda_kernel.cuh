#pragma once
// The combine kernel, included by one .cu per input dtype so instantiations build in parallel.
// A group of threads (threads/tokens_per_cta, whole warps) owns one token: its first warp
// compacts the selected slots (row, weight) in slot order into shared memory with a ballot;
// then each thread walks its column vectors, loading the selected rows four at a time and
// accumulating in fp32. A row's address is its column's address in row 0 plus row x the row's
// bytes (an int: the launcher refuses rows of 2 GiB), one wide multiply-add per slot. rmsnorm adds the residual, stores residual_out, reduces the sum of
// squares over the group and rescales in a second pass over the (cache-hot) residual_out.
// Device code only, so tests/kernels/combine/combine_emulation_test.cpp can run it on the cpu; the launcher
// is in cuda_launch.cuh. Internal linkage: each includer gets its own copy.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "combine/cuda_launch.hpp"
#include "combine/spec.hpp"
#include "common/cuda_pdl.cuh"

namespace moe::combine_cuda::detail {

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxTpc = 8;

template <int B> struct Raw;
template <> struct Raw<2> { using type = unsigned short; };
template <> struct Raw<4> { using type = unsigned int; };
template <> struct Raw<8> { using type = uint2; };
template <> struct Raw<16> { using type = uint4; };

template <class T> struct Cvt;
template <> struct Cvt<float> {
  static constexpr bool kBits = false;
  static __device__ __forceinline__ float in(float v) { return v; }
  static __device__ __forceinline__ float out(float v) { return v; }
};
template <> struct Cvt<__nv_bfloat16> {
  static constexpr bool kBits = true;
  // The float whose bit pattern is b.
  static __device__ __forceinline__ float bits(unsigned b) {
    union {
      unsigned u;
      float f;
    } v{b};
    return v.f;
  }
  static __device__ __forceinline__ float in(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 out(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Cvt<__half> {
  static constexpr bool kBits = false;
  static __device__ __forceinline__ float in(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half out(float v) { return __float2half_rn(v); }
};

// N elements of T at p (aligned to sizeof(T)*N) as floats, with plain loads: y_sorted is the
// previous kernel's output, and ptxas may hoist a non-coherent load (__ldg) above the grid
// dependency wait.
template <class T, int N>
__device__ __forceinline__ void load(const T* p, float (&f)[N]) {
  using R = typename Raw<sizeof(T) * N>::type;
  union {
    R raw;
    T e[N];
    unsigned w[(sizeof(T) * N + 3) / 4];
  } u;
  u.raw = *reinterpret_cast<const R*>(p);
  if constexpr (sizeof(T) == 2 && N % 2 == 0 && Cvt<T>::kBits) {
    // A bf16 is the top half of its float: one shift or mask per element, where converting
    // each half on its own costs a byte permute more for the upper one.
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      f[2 * i] = Cvt<T>::bits(u.w[i] << 16);
      f[2 * i + 1] = Cvt<T>::bits(u.w[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = Cvt<T>::in(u.e[i]);
  }
}

// N floats rounded to T, stored at p in 16-byte (or smaller) pieces.
template <class T, int N>
__device__ __forceinline__ void store(T* p, const float (&f)[N]) {
  constexpr int kBytes = sizeof(T) * N;
  constexpr int kPiece = kBytes > 16 ? 16 : kBytes;
  constexpr int kPer = kPiece / sizeof(T);
  using R = typename Raw<kPiece>::type;
#pragma unroll
  for (int q = 0; q < N / kPer; ++q) {
    union {
      R raw;
      T e[kPer];
    } u;
#pragma unroll
    for (int i = 0; i < kPer; ++i) u.e[i] = Cvt<T>::out(f[q * kPer + i]);
    reinterpret_cast<R*>(p)[q] = u.raw;
  }
}

struct Dev {
  const void* y;
  const int* dst;
  const float* w;
  const void* residual;
  const void* gamma;
  void* out;
  void* residual_out;
  long long T, D, rows;
  int K;
  float eps;
};

template <class Tin, class Tout, int THREADS, int N, bool RMS>
__global__ void __launch_bounds__(THREADS) combine_kernel(Dev a, int tpc) {
  __shared__ int s_row[kMaxTpc][kCombineMaxSlots];
  __shared__ float s_w[kMaxTpc][kCombineMaxSlots];
  __shared__ int s_n[kMaxTpc];
  __shared__ float s_red[THREADS / 32];
  const int G = THREADS / tpc;  // threads per token, a multiple of 32
  const int g = threadIdx.x / G, lt = threadIdx.x % G;
  const long long t = static_cast<long long>(blockIdx.x) * tpc + g;
  const bool active = t < a.T;
  const Tin* y = static_cast<const Tin*>(a.y);
  // dst, the weights and y_sorted are all earlier stages' outputs: wait before the first read.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();

  if (lt < 32) {  // the group's first warp: selected slots, in slot order
    int n = 0;
    for (int j0 = 0; j0 < a.K; j0 += 32) {
      const int j = j0 + lt;
      long long row = -1;
      float w = 0.f;
      if (active && j < a.K) {
        const long long f = t * a.K + j;
        w = a.w[f];
        row = a.dst ? static_cast<long long>(a.dst[f]) : f;
      }
      const bool sel = row >= 0 && row < a.rows && w != 0.f;
      const unsigned m = __ballot_sync(kFull, sel);
      if (sel) {
        const int p = n + __popc(m & ((1u << lt) - 1u));
        s_row[g][p] = static_cast<int>(row);
        s_w[g][p] = w;
      }
      n += __popc(m);
    }
    if (lt == 0) s_n[g] = n;
  }
  __syncthreads();

  const int n = s_n[g];
  const int* rows = s_row[g];
  const unsigned pitch = static_cast<unsigned>(a.D * static_cast<long long>(sizeof(Tin)));
  const float* ws = s_w[g];
  const long long vecs = a.D / N;
  float sumsq = 0.f;
  if (active) {
    for (long long c = lt; c < vecs; c += G) {
      const long long col = c * N;
      const char* y0 = reinterpret_cast<const char*>(y + col);  // this column of row 0
      // Row r's vector: y0 + r * pitch, one IMAD.WIDE.U32 (rows are >= 0, both fit 32 bits).
      auto row_at = [&](int r) {
        return reinterpret_cast<const Tin*>(y0 + static_cast<unsigned long long>(static_cast<unsigned>(r)) * pitch);
      };
      float acc[N];
#pragma unroll
      for (int e = 0; e < N; ++e) acc[e] = 0.f;
      int i = 0;
      // Four rows in flight; the sum stays in slot order. Not unrolled further: the extra
      // trip-count registers of a 2x unroll spilled (f16 256t N8 rms) and were reloaded for
      // every column.
#pragma unroll 1
      for (; i + 4 <= n; i += 4) {
        float v0[N], v1[N], v2[N], v3[N];
        load<Tin, N>(row_at(rows[i]), v0);
        load<Tin, N>(row_at(rows[i + 1]), v1);
        load<Tin, N>(row_at(rows[i + 2]), v2);
        load<Tin, N>(row_at(rows[i + 3]), v3);
#pragma unroll
        for (int e = 0; e < N; ++e) {
          acc[e] = fmaf(ws[i], v0[e], acc[e]);
          acc[e] = fmaf(ws[i + 1], v1[e], acc[e]);
          acc[e] = fmaf(ws[i + 2], v2[e], acc[e]);
          acc[e] = fmaf(ws[i + 3], v3[e], acc[e]);
        }
      }
      // At most three left: not unrolled, so the four-row loop above is the only hot copy.
#pragma unroll 1
      for (; i < n; ++i) {
        float v[N];
        load<Tin, N>(row_at(rows[i]), v);
#pragma unroll
        for (int e = 0; e < N; ++e) acc[e] = fmaf(ws[i], v[e], acc[e]);
      }
      const long long at = t * a.D + col;
      if constexpr (RMS) {
        float r[N];
        load<Tin, N>(static_cast<const Tin*>(a.residual) + at, r);
#pragma unroll
        for (int e = 0; e < N; ++e) {
          // The norm sees residual_out as stored: round first, then square.
          r[e] = Cvt<Tin>::in(Cvt<Tin>::out(r[e] + acc[e]));
          sumsq = fmaf(r[e], r[e], sumsq);
        }
        store<Tin, N>(static_cast<Tin*>(a.residual_out) + at, r);
      } else {
        store<Tout, N>(static_cast<Tout*>(a.out) + at, acc);
      }
    }
  }
  if constexpr (RMS) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sumsq += __shfl_xor_sync(kFull, sumsq, o);
    if ((threadIdx.x & 31) == 0) s_red[threadIdx.x >> 5] = sumsq;
    __syncthreads();
    float total = 0.f;
    for (int wi = 0; wi < G / 32; ++wi) total += s_red[g * (G / 32) + wi];
    const float inv = rsqrtf(total / static_cast<float>(a.D) + a.eps);
    if (active) {
      const Tin* gamma = static_cast<const Tin*>(a.gamma);
      for (long long c = lt; c < vecs; c += G) {
        const long long at = t * a.D + c * N;
        float r[N], gm[N];
        load<Tin, N>(static_cast<const Tin*>(a.residual_out) + at, r);  // this thread's own stores
        load<Tin, N>(gamma + c * N, gm);
#pragma unroll
        for (int e = 0; e < N; ++e) r[e] = r[e] * inv * gm[e];
        store<Tout, N>(static_cast<Tout*>(a.out) + at, r);
      }
    }
  }
}

// The instantiation of a config, or null when none was built.
using Kernel = void (*)(Dev, int);

template <class Tin, class Tout, bool RMS, int THREADS>
Kernel by_vec(int vec) {
  constexpr int es = sizeof(Tin);
  switch (vec) {
    case 16: return combine_kernel<Tin, Tout, THREADS, 16 / es, RMS>;
    case 8: return combine_kernel<Tin, Tout, THREADS, 8 / es, RMS>;
    case 4: return combine_kernel<Tin, Tout, THREADS, 4 / es, RMS>;
    case 2:
      if constexpr (es <= 2) return combine_kernel<Tin, Tout, THREADS, 1, RMS>;
      return nullptr;
  }
  return nullptr;
}

template <class Tin, class Tout, bool RMS>
Kernel find_kernel(const Config& c) {
  switch (c.threads) {
    case 128: return by_vec<Tin, Tout, RMS, 128>(c.vec);
    case 256: return by_vec<Tin, Tout, RMS, 256>(c.vec);
    case 512: return by_vec<Tin, Tout, RMS, 512>(c.vec);
  }
  return nullptr;
}

}  // namespace

}  // namespace moe::combine_cuda::detail
