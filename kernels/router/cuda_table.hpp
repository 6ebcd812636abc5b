#pragma once
// The table of compiled router kernels, filled by the four instantiation files.
#include <cuda_runtime_api.h>

#include "router/cuda_row_args.hpp"

namespace moe::router {

struct KernelFns {
  void (*launch)(const kern::Args& a, int grid, int block, cudaStream_t stream);
  int (*blocks_per_sm)(int block);  // 0 when the occupancy query fails
};

void fill_kernels_16(KernelFns* table);    // cuda_kernels_16.cu
void fill_kernels_32(KernelFns* table);    // cuda_kernels_32.cu
void fill_kernels_wide(KernelFns* table);    // cuda_kernels_wide.cu
void fill_kernels_packed(KernelFns* table);  // cuda_kernels_packed.cu

}  // namespace moe::router
