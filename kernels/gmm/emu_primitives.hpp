#pragma once
// The device primitives the gmm kernel headers are written against (cuda_primitives.cuh on a
// GPU), mapped onto the SIMT emulator's PTX (emu/ptx.hpp), so that cuda_kernel.cuh and
// wgmma_kernels.cuh compile as host code in namespace moe::gmm::emulated. Include this, then
// the kernel headers; only the emu backend (emu.cpp) and the tests do.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "emu/ptx.hpp"
#include "emu/simt_emulator.hpp"

#define GMM_EMULATED_PRIMITIVES 1
#define GMM_KERNEL_NAMESPACE emulated
#define GMM_DEVICE inline
#define GMM_KERNEL(threads) inline void  // inline: tests include the kernels too
#define MOE_GRID_DEPENDENCY_WAIT() ::simt::ptx::griddepcontrol_wait()
#define MOE_LAUNCH_DEPENDENTS() ::simt::ptx::griddepcontrol_launch_dependents()

#include "gmm/mma/cuda_configs.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"

namespace moe::gmm::emulated {

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int thread_x() { return simt::thread(); }
inline long long block_x() { return simt::block(); }
inline long long grid_x() { return simt::grid(); }
inline int lane() { return simt::lane(); }
inline int warp() { return simt::warp(); }
inline void sync_threads() { simt::sync_threads(); }
template <class T>
T load_plain(const T* p) {
  return *p;
}
inline unsigned char* dynamic_smem() { return simt::dynamic_smem(); }
inline std::uint32_t smem_u32(const void* p) { return simt::ptx::smem_offset(p); }

inline int shfl_up(int v, int d) {
  auto& x = simt::exchange();
  x[lane()][0] = static_cast<std::uint32_t>(v);
  simt::sync_warp();
  const int r = lane() >= d ? static_cast<int>(static_cast<std::uint32_t>(x[lane() - d][0])) : v;
  simt::sync_warp();
  return r;
}

inline void cp_async16(std::uint32_t dst, const void* src, bool valid) { simt::ptx::cp_async16(dst, src, valid); }
inline void cp_async4(std::uint32_t dst, const void* src) { simt::ptx::cp_async4(dst, src); }
inline void cp_async_commit() { simt::ptx::cp_async_commit(); }
template <int N>
void cp_async_wait() {
  simt::ptx::cp_async_wait(N);
}
inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) { simt::ptx::ldmatrix_x4(r, addr); }
template <bool BF16>
void mma16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  simt::ptx::mma_m16n8k16<BF16>(d, a, b0, b1);
}
template <bool BF16>
std::uint32_t pack2(float lo, float hi) {
  return simt::ptx::pack2<BF16>(lo, hi);
}
template <bool BF16>
float to_f32(std::uint16_t bits) {
  return simt::ptx::half_to_float<BF16>(bits);
}
inline float exp_fast(float x) { return std::exp(x); }

inline void store_f32x2(float* p, float a, float b) {
  simt::ptx::need_aligned(p, 8, "float2 store");
  p[0] = a;
  p[1] = b;
}
inline void load_f32x2(const float* p, float& a, float& b) {
  simt::ptx::need_aligned(p, 8, "float2 load");
  a = p[0];
  b = p[1];
}
inline void store_u32(std::uint16_t* p, std::uint32_t v) {
  simt::ptx::need_aligned(p, 4, "32-bit store");
  std::memcpy(p, &v, 4);
}
struct Vec8 {
  std::uint16_t v[8];
};
inline Vec8 load_vec8(const std::uint16_t* p) {
  simt::ptx::need_aligned(p, 16, "16-byte load");
  Vec8 r;
  std::memcpy(r.v, p, 16);
  return r;
}
inline void store_vec8(std::uint16_t* p, const Vec8& v) {
  simt::ptx::need_aligned(p, 16, "16-byte store");
  std::memcpy(p, v.v, 16);
}
inline void load_i32x4(const std::int32_t* p, int& a, int& b, int& c, int& d) {
  simt::ptx::need_aligned(p, 16, "16-byte load");
  a = p[0];
  b = p[1];
  c = p[2];
  d = p[3];
}
inline void load_relaxed_i32x4(const std::int32_t* p, int& a, int& b, int& c, int& d) { load_i32x4(p, a, b, c, d); }
inline void prefetch_l2(const void* p, std::uint32_t bytes) { simt::ptx::prefetch_l2(p, bytes); }
inline void store_i32x4(std::int32_t* p, int a, int b, int c, int d) {
  simt::ptx::need_aligned(p, 16, "16-byte store");
  p[0] = a;
  p[1] = b;
  p[2] = c;
  p[3] = d;
}
inline std::uint32_t umulhi(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
}
// CTAs run one after another and fibers switch only at barriers: stores are visible at once and
// a read-modify-write is atomic.
inline void fence_gpu() {}
inline int atomic_add(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline std::uint32_t load_cg_u32(const std::uint16_t* p) {
  simt::ptx::need_aligned(p, 4, "32-bit load");
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void load_cg_f32x2(const float* p, float& a, float& b) { load_f32x2(p, a, b); }

}  // namespace moe::gmm::emulated

#include "gmm/mma/cuda_kernel.cuh"
#include "gmm/wgmma/wgmma_kernels.cuh"
