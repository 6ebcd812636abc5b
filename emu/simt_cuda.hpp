#pragma once
// CUDA's kernel-side names over the simt emulator, so a kernel header written in plain CUDA
// (threadIdx, __syncthreads, __shfl_sync, ...) compiles as host code for a test. Include it
// before the kernel header. Collectives take the full-warp mask only, the form our kernels
// use, and fault when the lanes of a warp meet at different collectives or pass different
// widths or offsets.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "emu/ptx.hpp"
#include "emu/simt_emulator.hpp"

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#undef __forceinline__
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)
#define __forceinline__ inline
#define MOE_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(::simt::dynamic_smem())
#define MOE_GRID_DEPENDENCY_WAIT() ::simt::ptx::griddepcontrol_wait()
#define MOE_LAUNCH_DEPENDENTS() ::simt::ptx::griddepcontrol_launch_dependents()
#define MOE_PREFETCH_L2(p, bytes) ::simt::ptx::prefetch_l2(p, bytes)

namespace simt_cuda {

struct Idx {
  unsigned x, y, z;
};

enum Op : std::uint64_t { kShfl = 1, kShflUp, kShflXor, kBallot, kMatch, kSyncWarp, kReduceMax, kReduceMin };

inline void full_mask(unsigned mask, const char* what) {
  if (mask != 0xffffffffu) simt::fault(std::string(what) + " with a partial mask: the emulator takes full warps only");
}

template <class T>
std::uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= 8);
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

// Posts this lane's operand, waits for the warp, checks every lane came to the same
// collective with the same `uniform` operands (a shuffle's width, an xor or up offset), and
// returns the warp's operands; call done() once they are read.
inline simt::Exchange& meet(Op op, std::uint64_t value, std::uint64_t uniform = 0) {
  simt::Exchange& x = simt::exchange();
  x[simt::lane()][0] = value;
  x[simt::lane()][1] = op;
  x[simt::lane()][2] = uniform;
  simt::sync_warp();
  for (int l = 0; l < 32; ++l) {
    if (x[l][1] != op) simt::fault("lanes of a warp meet at different collectives (divergence)");
    if (x[l][2] != uniform) simt::fault("lanes of a warp pass different widths or offsets to one collective");
  }
  return x;
}
inline void done() { simt::sync_warp(); }

// Within segments of `width` lanes, as CUDA defines it: a source outside the lane's own
// segment (up, xor) gives the lane its own value.
template <class T>
T shuffle(Op op, unsigned mask, T v, int arg, int width) {
  full_mask(mask, "a shuffle");
  if (width < 1 || width > 32 || (width & (width - 1)))
    simt::fault("a shuffle of width " + std::to_string(width) + ": use a power of two up to 32");
  const std::uint64_t uniform = static_cast<std::uint64_t>(width) << 32 |
                                (op == kShfl ? 0u : static_cast<std::uint32_t>(arg));
  simt::Exchange& x = meet(op, bits_of(v), uniform);
  const int lane = simt::lane(), base = lane / width * width, in = lane - base;
  int src = lane;
  if (op == kShfl)
    src = base + ((arg % width) + width) % width;
  else if (op == kShflUp)
    src = in >= arg ? lane - arg : lane;
  else if (((in ^ arg) & ~(width - 1)) == 0)
    src = base + (in ^ arg);
  const T r = from_bits<T>(x[src][0]);
  done();
  return r;
}

template <class Pick>
unsigned reduce(Op op, unsigned mask, unsigned v, Pick pick) {
  full_mask(mask, "a warp reduction");
  simt::Exchange& x = meet(op, v);
  unsigned r = static_cast<unsigned>(x[0][0]);
  for (int l = 1; l < 32; ++l) r = pick(r, static_cast<unsigned>(x[l][0]));
  done();
  return r;
}

}  // namespace simt_cuda

#define threadIdx (::simt_cuda::Idx{static_cast<unsigned>(::simt::thread()), 0u, 0u})
#define blockIdx (::simt_cuda::Idx{static_cast<unsigned>(::simt::block()), 0u, 0u})
#define blockDim (::simt_cuda::Idx{static_cast<unsigned>(::simt::block_dim()), 1u, 1u})
#define gridDim (::simt_cuda::Idx{static_cast<unsigned>(::simt::grid()), 1u, 1u})

inline void __syncthreads() { simt::sync_threads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  simt_cuda::full_mask(mask, "__syncwarp");
  simt_cuda::meet(simt_cuda::kSyncWarp, 0);
  simt_cuda::done();
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return simt_cuda::shuffle(simt_cuda::kShfl, mask, v, src, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return simt_cuda::shuffle(simt_cuda::kShflUp, mask, v, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return simt_cuda::shuffle(simt_cuda::kShflXor, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  simt_cuda::full_mask(mask, "__ballot_sync");
  simt::Exchange& x = simt_cuda::meet(simt_cuda::kBallot, pred != 0);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l) r |= static_cast<unsigned>(x[l][0] != 0) << l;
  simt_cuda::done();
  return r;
}
template <class T>
unsigned __match_any_sync(unsigned mask, T v) {
  simt_cuda::full_mask(mask, "__match_any_sync");
  const std::uint64_t mine = simt_cuda::bits_of(v);
  simt::Exchange& x = simt_cuda::meet(simt_cuda::kMatch, mine);
  unsigned r = 0;
  for (int l = 0; l < 32; ++l) r |= static_cast<unsigned>(x[l][0] == mine) << l;
  simt_cuda::done();
  return r;
}

inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return simt_cuda::reduce(simt_cuda::kReduceMax, mask, v, [](unsigned a, unsigned b) { return a > b ? a : b; });
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return simt_cuda::reduce(simt_cuda::kReduceMin, mask, v, [](unsigned a, unsigned b) { return a < b ? a : b; });
}

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }
// Fibers switch only at barriers, so a read-modify-write is atomic here.
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
template <class T>
void __stcs(T* p, T v) {
  *p = v;
}
