#pragma once
// The router kernel template and the glue that turns kShapes entries into table entries.
#include <utility>

#include <cuda_runtime.h>

#include "common/cuda_pdl.cuh"
#include "moe/cuda_launch_api.hpp"
#include "router/cuda_row.hpp"
#include "router/cuda_shapes.hpp"
#include "router/cuda_table.hpp"

namespace moe::router::kern {

// The Lane interface of cuda_row.hpp on the device. Every call site is reached by all 32
// lanes of the warp (the row loop is warp-uniform), so full masks are right.
struct DeviceLane {
  __device__ __forceinline__ int lane() const { return static_cast<int>(threadIdx.x & 31u); }
  __device__ __forceinline__ unsigned xor_u(unsigned v, int off) const { return __shfl_xor_sync(0xffffffffu, v, off); }
  __device__ __forceinline__ float xor_f(float v, int off) const { return __shfl_xor_sync(0xffffffffu, v, off); }
  __device__ __forceinline__ unsigned idx_u(unsigned v, int src, int width) const {
    return __shfl_sync(0xffffffffu, v, src, width);
  }
  __device__ __forceinline__ unsigned max_u(unsigned v) const { return __reduce_max_sync(0xffffffffu, v); }
  __device__ __forceinline__ unsigned min_u(unsigned v) const { return __reduce_min_sync(0xffffffffu, v); }
  __device__ __forceinline__ void sync() const { __syncwarp(); }
};

template <int LANES, int EPL, int V, int ESIZE>
__global__ void __launch_bounds__(kMaxWarps * 32) router_kernel(const Args a) {
  DeviceLane ln;
  // The logits are the predecessor's output and the first thing a row reads: wait at entry.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long long nwarps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  RowKernel<LANES, EPL, V, ESIZE>::rows(a, ln, warp, nwarps);
}

template <int I>
void launch_shape(const Args& a, int grid, int block, cudaStream_t stream) {
  constexpr KernelShape s = kShapes[I];
  Args by_value = a;
  launch_kernel_args(reinterpret_cast<const void*>(&router_kernel<s.lanes, s.epl, s.vec, s.esize>),
                     static_cast<unsigned>(grid), static_cast<unsigned>(block), 0, stream, by_value);
}

template <int I>
int blocks_per_sm(int block) {
  constexpr KernelShape s = kShapes[I];
  try {
    return kernel_facts(reinterpret_cast<const void*>(&router_kernel<s.lanes, s.epl, s.vec, s.esize>), block, 0)
        .blocks_per_sm;
  } catch (const std::exception&) {
    return 0;  // the caller assumes one resident CTA
  }
}

template <int BEGIN, int... Is>
void fill_table(KernelFns* t, std::integer_sequence<int, Is...>) {
  ((t[BEGIN + Is] = KernelFns{&launch_shape<BEGIN + Is>, &blocks_per_sm<BEGIN + Is>}), ...);
}

}  // namespace moe::router::kern
