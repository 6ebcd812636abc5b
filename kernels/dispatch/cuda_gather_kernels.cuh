#pragma once
// x -> x_sorted, a byte copy (one set of instantiations serves every dtype). A group of
// threads moves VB-byte vectors, UNROLL loads in flight before the stores.
//   by row:   each sorted row copies its token's row (src/K); padding rows are zeroed.
//   by token: each token reads its row once and stores it to each of its rows (dst), whose
//             addresses are computed once per slot; the grid's last blocks zero the padding rows.
// Device code only, so tests/kernels/dispatch/dispatch_emulation_test.cpp can run it on the cpu; the launcher
// is in cuda_gather.cu. Internal linkage: each includer gets its own copy.
#include <cstdint>

#include "common/cuda_pdl.cuh"

namespace moe::dispatch_cuda::gather_kernels {

namespace {

template <int VB> struct VecOf;
template <> struct VecOf<16> { using type = uint4; };
template <> struct VecOf<8> { using type = uint2; };
template <> struct VecOf<4> { using type = unsigned int; };
template <> struct VecOf<2> { using type = unsigned short; };

struct Dev {
  const char* x;
  const int* src;
  char* xs;
  long long rows, slots;
  int K;
  long long row_bytes;
  const int* used;  // offsets[local], or null: every row is in use
};

// Rows [0, in_use) are the output; clamped so that broken offsets never widen the buffer.
__device__ __forceinline__ long long rows_in_use(const Dev& g) {
  if (!g.used) return g.rows;
  const long long u = *g.used;
  return u < 0 ? 0 : (u < g.rows ? u : g.rows);
}

// This thread's vectors c, c+group, ... (UNROLL of them, those below units), loads in flight together.
template <class V, int UNROLL>
__device__ __forceinline__ void load_run(const V* in, long long c, int group, long long units, V (&v)[UNROLL]) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long i = c + static_cast<long long>(u) * group;
    if (i < units) v[u] = *(in + i);
  }
}

// One row's vectors [0, units) by the `group` threads of which this is thread lt: zeros, or a
// copy of `in` with UNROLL loads in flight (the gathers here and the decode front's).
template <class V>
__device__ __forceinline__ void zero_row(V* out, long long units, int lt, int group) {
  const V zero{};
  for (long long c = lt; c < units; c += group) __stcs(out + c, zero);
}
template <class V, int UNROLL>
__device__ __forceinline__ void copy_row(const V* in, V* out, long long units, int lt, int group) {
  for (long long c = lt; c < units; c += static_cast<long long>(group) * UNROLL) {
    V v[UNROLL];
    load_run(in, c, group, units, v);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = c + static_cast<long long>(u) * group;
      if (i < units) __stcs(out + i, v[u]);
    }
  }
}

template <int THREADS, int VB, int UNROLL>
__global__ void __launch_bounds__(THREADS) gather_kernel(Dev g, int rows_per_cta) {
  using V = typename VecOf<VB>::type;
  const int group = THREADS / rows_per_cta;
  const int lt = threadIdx.x % group;
  const long long r = static_cast<long long>(blockIdx.x) * rows_per_cta + threadIdx.x / group;
  // offsets and src are the aligner's output, x the layer input: nothing is read before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  if (r >= rows_in_use(g)) return;
  const long long units = g.row_bytes / VB;
  V* out = reinterpret_cast<V*>(g.xs + r * g.row_bytes);
  const int s = g.src[r];
  if (s < 0 || s >= g.slots) {  // padding row (or a map value that must not be followed)
    zero_row(out, units, lt, group);
    return;
  }
  copy_row<V, UNROLL>(reinterpret_cast<const V*>(g.x + static_cast<long long>(s / g.K) * g.row_bytes), out, units, lt,
                      group);
}

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxGroups = 4;     // kGatherRows' largest value
constexpr int kMaxSlots = 80;     // topk <= 64 plus shared <= 16
constexpr int kPadRowsPerBlock = 64;

struct Tok {
  const int* dst;
  long long T, token_blocks;
};

template <int THREADS, int VB, int UNROLL>
__global__ void __launch_bounds__(THREADS) gather_by_token_kernel(Dev g, Tok tk, int per_cta) {
  using V = typename VecOf<VB>::type;
  __shared__ V* s_out[kMaxGroups][kMaxSlots];
  __shared__ int s_n[kMaxGroups];
  const int group = THREADS / per_cta;
  const int gi = threadIdx.x / group, lt = threadIdx.x % group;
  const long long units = g.row_bytes / VB;
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  if (blockIdx.x >= tk.token_blocks) {  // the tail: zero the padding rows of a row range
    const long long r0 = (blockIdx.x - tk.token_blocks) * static_cast<long long>(kPadRowsPerBlock);
    const long long end = rows_in_use(g);
    const long long r1 = r0 + kPadRowsPerBlock < end ? r0 + kPadRowsPerBlock : end;
    for (long long r = r0 + gi; r < r1; r += per_cta) {
      const int s = g.src[r];
      if (s >= 0 && s < g.slots) continue;
      zero_row(reinterpret_cast<V*>(g.xs + r * g.row_bytes), units, lt, group);
    }
    return;
  }
  const long long t = static_cast<long long>(blockIdx.x) * per_cta + gi;
  const bool active = t < tk.T;
  if (lt < 32) {  // the group's first warp lists the token's rows
    int n = 0;
    for (int j0 = 0; j0 < g.K; j0 += 32) {
      const int j = j0 + lt;
      const long long row = active && j < g.K ? tk.dst[t * g.K + j] : -1;
      const bool ok = row >= 0 && row < g.rows;
      const unsigned m = __ballot_sync(kFull, ok);
      if (ok) s_out[gi][n + __popc(m & ((1u << lt) - 1u))] = reinterpret_cast<V*>(g.xs + row * g.row_bytes);
      n += __popc(m);
    }
    if (lt == 0) s_n[gi] = n;
  }
  __syncthreads();
  if (!active) return;
  const int n = s_n[gi];
  V* const* outs = s_out[gi];
  const V* in = reinterpret_cast<const V*>(g.x + t * g.row_bytes);
  for (long long c = lt; c < units; c += static_cast<long long>(group) * UNROLL) {
    V v[UNROLL];
    load_run(in, c, group, units, v);
    for (int k = 0; k < n; ++k) {
      V* out = outs[k];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const long long i = c + static_cast<long long>(u) * group;
        if (i < units) __stcs(out + i, v[u]);
      }
    }
  }
}


// The instantiation of a config, or null when none was built.
using RowKernel = void (*)(Dev, int);
using TokenKernel = void (*)(Dev, Tok, int);

template <bool BY_TOKEN, int T, int VB, int U>
constexpr auto kernel_of() {
  if constexpr (BY_TOKEN)
    return &gather_by_token_kernel<T, VB, U>;
  else
    return &gather_kernel<T, VB, U>;
}

template <bool BY_TOKEN, int T, int VB>
auto by_unroll(int unroll) -> decltype(kernel_of<BY_TOKEN, T, VB, 1>()) {
  switch (unroll) {
    case 1: return kernel_of<BY_TOKEN, T, VB, 1>();
    case 4: return kernel_of<BY_TOKEN, T, VB, 4>();
  }
  return nullptr;
}

template <bool BY_TOKEN, int T>
auto by_vec(int vec, int unroll) -> decltype(kernel_of<BY_TOKEN, T, 16, 1>()) {
  switch (vec) {
    case 16: return by_unroll<BY_TOKEN, T, 16>(unroll);
    case 8: return by_unroll<BY_TOKEN, T, 8>(unroll);
    case 4: return by_unroll<BY_TOKEN, T, 4>(unroll);
    case 2: return by_unroll<BY_TOKEN, T, 2>(unroll);
  }
  return nullptr;
}

template <bool BY_TOKEN>
auto find_kernel(int threads, int vec, int unroll) -> decltype(kernel_of<BY_TOKEN, 128, 16, 1>()) {
  switch (threads) {
    case 128: return by_vec<BY_TOKEN, 128>(vec, unroll);
    case 256: return by_vec<BY_TOKEN, 256>(vec, unroll);
    case 512: return by_vec<BY_TOKEN, 512>(vec, unroll);
  }
  return nullptr;
}

}  // namespace

}  // namespace moe::dispatch_cuda::gather_kernels
