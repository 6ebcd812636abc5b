#pragma once
// The few device instructions the gmm kernels are built from (cp.async, ldmatrix, mma.sync,
// conversions, thread indices). The kernels use nothing else, so the cpu test suite can
// compile the very same kernel source against an emulation of these (tests/kernels/gmm/gmm_emulation_test.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda_l2_prefetch.cuh"

#define GMM_DEVICE __device__ __forceinline__
#define GMM_KERNEL(threads) __global__ void __launch_bounds__(threads)

namespace moe::gmm::cuda {

GMM_DEVICE int thread_x() { return static_cast<int>(threadIdx.x); }
GMM_DEVICE long long block_x() { return blockIdx.x; }
GMM_DEVICE long long grid_x() { return gridDim.x; }
GMM_DEVICE void sync_threads() { __syncthreads(); }
GMM_DEVICE int shfl_up(int v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
// What a predecessor kernel wrote (offsets, the tile map, row weights) is read with plain loads:
// ptxas may hoist a non-coherent load (__ldg, ld.global.nc) above griddepcontrol.wait, or merge
// two of one address across it, and read the bytes before the predecessor wrote them.
template <class T>
GMM_DEVICE T load_plain(const T* p) {
  return *p;
}

GMM_DEVICE unsigned char* dynamic_smem() {
  extern __shared__ __align__(16) unsigned char gmm_smem[];
  return gmm_smem;
}
GMM_DEVICE std::uint32_t smem_u32(const void* p) { return static_cast<std::uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared; when !valid nothing is read and the 16 bytes are zero-filled.
GMM_DEVICE void cp_async16(std::uint32_t dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
// 4 bytes global -> shared (.ca: the only cache mode with copies under 16 bytes).
GMM_DEVICE void cp_async4(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
GMM_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
GMM_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, lane t receives
// row t/4, columns 2(t%4) and 2(t%4)+1 of each (low half first).
GMM_DEVICE void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += A(16x16, row) * B(16x8, col), fp32 accumulators.
template <bool BF16>
GMM_DEVICE void mma16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  if constexpr (BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to the dtype, low half first (the lower column).
template <bool BF16>
GMM_DEVICE std::uint32_t pack2(float lo, float hi) {
  if constexpr (BF16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

GMM_DEVICE float exp_fast(float x) { return __expf(x); }
GMM_DEVICE void store_f32x2(float* p, float a, float b) { *reinterpret_cast<float2*>(p) = make_float2(a, b); }
GMM_DEVICE void load_f32x2(const float* p, float& a, float& b) {
  const float2 v = *reinterpret_cast<const float2*>(p);
  a = v.x;
  b = v.y;
}
GMM_DEVICE void store_u32(std::uint16_t* p, std::uint32_t v) { *reinterpret_cast<std::uint32_t*>(p) = v; }
// The tile map's entries: one 16-byte access each (plain: the schedule kernel just wrote them).
GMM_DEVICE void load_i32x4(const std::int32_t* p, int& a, int& b, int& c, int& d) {
  const int4 v = *reinterpret_cast<const int4*>(p);
  a = v.x;
  b = v.y;
  c = v.z;
  d = v.w;
}
// A map entry read before the PDL wait (prefetch_first_tile): a strong load at gpu scope, never
// an L1 line of the previous call's map, and not a non-coherent load ptxas may move.
GMM_DEVICE void load_relaxed_i32x4(const std::int32_t* p, int& a, int& b, int& c, int& d) {
  asm volatile("ld.relaxed.gpu.global.v4.s32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
               : "l"(p)
               : "memory");
}
// common/cuda_l2_prefetch.cuh's bulk L2 prefetch, under gmm's name (emu_primitives.hpp has the other).
GMM_DEVICE void prefetch_l2(const void* p, std::uint32_t bytes) { MOE_PREFETCH_L2(p, bytes); }
GMM_DEVICE void store_i32x4(std::int32_t* p, int a, int b, int c, int d) {
  *reinterpret_cast<int4*>(p) = make_int4(a, b, c, d);
}
GMM_DEVICE std::uint32_t umulhi(std::uint32_t a, std::uint32_t b) { return __umulhi(a, b); }
// The fold's hand-over (combine_fold.cuh): a tile's stores visible device-wide before its count,
// and the last tile's reads of other CTAs' stores from L2 (ld.global.cg), never a stale L1 line.
GMM_DEVICE void fence_gpu() { __threadfence(); }
GMM_DEVICE int atomic_add(int* p, int v) { return atomicAdd(p, v); }
GMM_DEVICE std::uint32_t load_cg_u32(const std::uint16_t* p) { return __ldcg(reinterpret_cast<const unsigned*>(p)); }
GMM_DEVICE void load_cg_f32x2(const float* p, float& a, float& b) {
  const float2 v = __ldcg(reinterpret_cast<const float2*>(p));
  a = v.x;
  b = v.y;
}
// Eight 16-bit elements, one 16-byte access (rows are multiples of 8 elements, 16-byte aligned).
struct Vec8 {
  std::uint16_t v[8];
};
GMM_DEVICE Vec8 load_vec8(const std::uint16_t* p) {
  const uint4 r = *reinterpret_cast<const uint4*>(p);
  return *reinterpret_cast<const Vec8*>(&r);
}
GMM_DEVICE void store_vec8(std::uint16_t* p, const Vec8& v) {
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
}
template <bool BF16>
GMM_DEVICE float to_f32(std::uint16_t bits) {
  if constexpr (BF16) return __bfloat162float(__ushort_as_bfloat16(bits));
  else return __half2float(__ushort_as_half(bits));
}

}  // namespace moe::gmm::cuda
