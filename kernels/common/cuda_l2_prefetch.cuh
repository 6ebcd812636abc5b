#pragma once
// cp.async.bulk.prefetch.L2 for kernels outside gmm (gmm's own is gmm/cuda_primitives.cuh's
// prefetch_l2): `bytes`, a positive multiple of 16 from a 16-byte aligned address, fetched into
// L2 by the copy engine with nothing waited for. Before Hopper nothing is sent. The cpu emulator
// (emu/simt_cuda.hpp) defines it first: there it checks the operands and logs the prefetch.
#include <cstdint>

#ifndef MOE_PREFETCH_L2
static __device__ __forceinline__ void moe_prefetch_l2(const void* p, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)p, (void)bytes;
#endif
}
#define MOE_PREFETCH_L2(p, bytes) moe_prefetch_l2(p, bytes)
#endif
