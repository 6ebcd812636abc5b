// x -> x_sorted: each sorted row copies its token's row (src/K), padding rows are zeroed.
// A byte copy, so one set of instantiations serves every dtype; a group of threads per row
// moves VB-byte vectors, UNROLL loads in flight before the stores.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "dispatch/cuda_launch.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::dispatch_cuda {

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
};

template <int THREADS, int VB, int UNROLL>
__global__ void __launch_bounds__(THREADS) gather_kernel(Dev g, int rows_per_cta) {
  using V = typename VecOf<VB>::type;
  const int group = THREADS / rows_per_cta;
  const int lt = threadIdx.x % group;
  const long long r = static_cast<long long>(blockIdx.x) * rows_per_cta + threadIdx.x / group;
  if (r >= g.rows) return;
  const long long units = g.row_bytes / VB;
  V* out = reinterpret_cast<V*>(g.xs + r * g.row_bytes);
  const int s = g.src[r];
  if (s < 0 || s >= g.slots) {  // padding row (or a map value that must not be followed)
    const V zero{};
    for (long long c = lt; c < units; c += group) __stcs(out + c, zero);
    return;
  }
  const V* in = reinterpret_cast<const V*>(g.x + static_cast<long long>(s / g.K) * g.row_bytes);
  for (long long c = lt; c < units; c += static_cast<long long>(group) * UNROLL) {
    V v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = c + static_cast<long long>(u) * group;
      if (i < units) v[u] = __ldg(in + i);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long i = c + static_cast<long long>(u) * group;
      if (i < units) __stcs(out + i, v[u]);
    }
  }
}

using Kernel = void (*)(Dev, int);

template <int T, int VB>
Kernel by_unroll(int unroll) {
  switch (unroll) {
    case 1: return gather_kernel<T, VB, 1>;
    case 4: return gather_kernel<T, VB, 4>;
  }
  return nullptr;
}

template <int T>
Kernel by_vec(int vec, int unroll) {
  switch (vec) {
    case 16: return by_unroll<T, 16>(unroll);
    case 8: return by_unroll<T, 8>(unroll);
    case 4: return by_unroll<T, 4>(unroll);
    case 2: return by_unroll<T, 2>(unroll);
  }
  return nullptr;
}

Kernel find_kernel(int threads, int vec, int unroll) {
  switch (threads) {
    case 128: return by_vec<128>(vec, unroll);
    case 256: return by_vec<256>(vec, unroll);
    case 512: return by_vec<512>(vec, unroll);
  }
  return nullptr;
}

}  // namespace

void gather(const GatherArgs& a, int threads, int rows_per_cta, int vec, int unroll, void* stream) {
  const Kernel k = find_kernel(threads, vec, unroll);
  const std::string cfg = "threads=" + std::to_string(threads) + " vec=" + std::to_string(vec) +
                          " unroll=" + std::to_string(unroll) + " rows=" + std::to_string(rows_per_cta);
  if (!k) throw Error("dispatch gather: no instantiation for " + cfg);
  if (rows_per_cta < 1 || threads % rows_per_cta || threads / rows_per_cta < 32)
    throw Error("dispatch gather: " + cfg + " leaves fewer than 32 threads per row");
  const auto misaligned = [vec](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % vec != 0; };
  if (a.row_bytes % vec || misaligned(a.x) || misaligned(a.x_sorted))
    throw Error("dispatch gather: rows of " + std::to_string(a.row_bytes) + " bytes or the buffers are not " +
                std::to_string(vec) + "-byte aligned: use a smaller vec");
  if (a.rows <= 0) return;
  const long long blocks = (a.rows + rows_per_cta - 1) / rows_per_cta;
  if (blocks > 0x7fffffffLL) throw Error("dispatch gather: too many rows for one grid");
  const Dev d{static_cast<const char*>(a.x), a.src, static_cast<char*>(a.x_sorted), a.rows, a.slots, a.K,
              a.row_bytes};
  k<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(d, rows_per_cta);
  cuda_check(cudaGetLastError(), "dispatch gather launch");
}

}  // namespace moe::dispatch_cuda
