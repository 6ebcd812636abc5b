#pragma once
// The wgmma path's own small kernels, beside the CUTLASS grouped GEMM: the setup kernel that
// turns `offsets` into per-expert shapes, pointers and strides on the device, and the fused,
// vectorized silu(gate)*up pass over the gate|up rows the up GEMM wrote. No CUTLASS here, so
// the cpu tests compile this very source against emulated primitives (tests/kernels/gmm/wgmma_emulation_test.cpp).
#include <cstdint>

#include "common/cuda_pdl.cuh"
#include "gmm/wgmma/wgmma_configs.hpp"
#ifndef GMM_EMULATED_PRIMITIVES
#include "gmm/cuda_primitives.cuh"
#define GMM_KERNEL_NAMESPACE cuda
#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE {

using wgmma::SetupArgs;
using wgmma::SiluArgs;

constexpr int kWgmmaThreads = 256;

// A segment bound clamped into [0, rows]: broken offsets never address outside the tensors.
GMM_DEVICE int clamp_row(int v, int rows) { return v < 0 ? 0 : v > rows ? rows : v; }

// One thread per local expert. An expert without rows gets M = 0: CUTLASS's group scheduler
// gives it no tiles. Rows past offsets[E] belong to no expert and are left alone (as the mma
// kernel does); padding rows inside a segment are zero activations, so their output is zero.
GMM_KERNEL(kWgmmaThreads) wgmma_setup_kernel(const SetupArgs p) {
  // offsets are dispatch's; the shape arrays it writes are read by the previous stage's GEMM.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  for (long long e = block_x() * kWgmmaThreads + thread_x(); e < p.experts; e += grid_x() * kWgmmaThreads) {
    const int begin = clamp_row(load_plain(p.offsets + e), p.rows);
    const int end = max(begin, clamp_row(load_plain(p.offsets + e + 1), p.rows));
    // Swapped: CUTLASS's M is the weights' n rows, its N the expert's rows; D^T column-major
    // with leading dimension n is D row-major, so d and ldd are the same either way.
    p.g.problems[3 * e] = p.swap ? p.n : end - begin;
    p.g.problems[3 * e + 1] = p.swap ? end - begin : p.n;
    p.g.problems[3 * e + 2] = p.k;
    // Byte offsets: the operands are 16-bit or e4m3, the output 16-bit or (fp8 up) fp32.
    const auto* act = reinterpret_cast<const unsigned char*>(p.act);
    const auto* weight = reinterpret_cast<const unsigned char*>(p.weight);
    auto* out = reinterpret_cast<unsigned char*>(p.out);
    const void* rows_of_e = act + static_cast<long long>(begin) * p.k * p.in_bytes;
    const void* weights_of_e = weight + e * p.n * static_cast<long long>(p.k) * p.in_bytes;
    p.g.a[e] = p.swap ? weights_of_e : rows_of_e;
    p.g.b[e] = p.swap ? rows_of_e : weights_of_e;
    p.g.d[e] = out + static_cast<long long>(begin) * p.n * p.out_bytes;
    if (p.g.row_weight != nullptr) p.g.row_weight[e] = p.row_weight != nullptr ? p.row_weight + begin : nullptr;
    p.g.lda[e] = p.k;
    p.g.ldb[e] = p.k;
    p.g.ldd[e] = p.n;
    if (p.g.sfa != nullptr) {
      // fp8: the expert's rows of x_scale and its slab of w_scale, both K-major; swapped, the
      // weights' scales are A's and the rows' B's.
      const int kb = p.k / 128;
      const float* rows_scale = p.act_scale + static_cast<long long>(begin) * kb;
      const float* weights_scale = p.weight_scale + e * (p.n / 128) * static_cast<long long>(kb);
      p.g.sfa[e] = p.swap ? weights_scale : rows_scale;
      p.g.sfb[e] = p.swap ? rows_scale : weights_scale;
      wgmma::scale_layout(p.g.layout_sfa + wgmma::kScaleLayoutInts * e, p.swap ? p.n / 128 : end - begin, kb);
      wgmma::scale_layout(p.g.layout_sfb + wgmma::kScaleLayoutInts * e, p.swap ? end - begin : p.n / 128, kb);
    }
  }
}

// h = silu(gate) * up over the rows of every expert, eight columns a thread, fp32 math on the
// GEMM's rounded gate and up (the reference rounds once, at the end: within bf16 tolerance).
template <bool BF16>
GMM_KERNEL(kWgmmaThreads) wgmma_silu_kernel(const SiluArgs p) {
  // gate|up is the GEMM's output: launched programmatically like every kernel of ours, this may
  // start as soon as the GEMM lets it, so nothing is read before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const int used = clamp_row(load_plain(p.offsets + p.experts), p.rows);
  const int vecs = p.inter / 8;
  const long long total = static_cast<long long>(used) * vecs;
  for (long long i = block_x() * kWgmmaThreads + thread_x(); i < total; i += grid_x() * kWgmmaThreads) {
    const long long r = i / vecs;
    const int c = static_cast<int>(i % vecs) * 8;
    const std::uint16_t* row = p.gu + r * 2 * p.inter;
    const Vec8 g = load_vec8(row + c), u = load_vec8(row + p.inter + c);
    Vec8 h;
    for (int j = 0; j < 8; j += 2) {
      float v[2];
      for (int q = 0; q < 2; ++q) {
        const float x = to_f32<BF16>(g.v[j + q]);
        v[q] = x / (1.0f + exp_fast(-x)) * to_f32<BF16>(u.v[j + q]);
      }
      const std::uint32_t packed = pack2<BF16>(v[0], v[1]);
      h.v[j] = static_cast<std::uint16_t>(packed & 0xFFFFu);
      h.v[j + 1] = static_cast<std::uint16_t>(packed >> 16);
    }
    store_vec8(p.h + r * p.inter + c, h);
  }
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE
