#pragma once
// The library kernels' own small kernels, around cuBLAS's and cuBLASLt's GEMMs: the routed
// weight on 16-bit rows in place, fp32 rows scaled and rounded once to bf16, and the scale
// layouts cuBLASLt reads (each expert's activation scales M-major, weight scales on 16 bytes).
// silu*up and fp8 up's requantization are the wgmma path's kernels. Written against the gmm
// primitives, so the cpu tests can run this source under the emulator as the GPU runs it.
#include <cstdint>

#include "common/cuda_pdl.cuh"
#include "gmm/cublas/configs.hpp"
#ifndef GMM_EMULATED_PRIMITIVES
#include "gmm/cuda_primitives.cuh"
#define GMM_KERNEL_NAMESPACE cuda
#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE::lib {


constexpr int kThreads = 256;

struct RowsArgs {
  std::uint16_t* y = nullptr;          // [rows, cols] 16-bit: scaled in place, or written from f32
  const float* f32 = nullptr;          // [rows, cols] fp32 (round_rows_kernel's input)
  const float* row_weight = nullptr;   // [rows] or null
  const std::int32_t* offsets = nullptr;
  int rows = 0, cols = 0, experts = 0;
};

struct ScaleLayoutArgs {
  const float* act_scale = nullptr;  // [rows, kb] K-major
  float* act_out = nullptr;          // expert e's [kb][n_e] block at act_scale_base(begin_e, kb, e)
  const float* w_scale = nullptr;    // [experts, nb, kb]
  float* w_out = nullptr;            // [experts, nb, kb_pad]; null: the weight scales are read as they are
  const std::int32_t* offsets = nullptr;
  int rows = 0, kb = 0, experts = 0, nb = 0, kb_pad = 0;
};

GMM_DEVICE int clamp_rows(int v, int rows) { return v < 0 ? 0 : v > rows ? rows : v; }

// Rows past offsets[E] belong to no expert: no kernel here touches them.
GMM_DEVICE long long used_rows(const std::int32_t* offsets, int experts, int rows) {
  return clamp_rows(load_plain(offsets + experts), rows);
}

// y[r, :] *= row_weight[r], eight 16-bit elements a thread (cols is a multiple of 8).
template <bool BF16>
GMM_KERNEL(kThreads) scale_rows_kernel(const RowsArgs p) {
  // y is the library GEMM's output and the offsets dispatch's: nothing is read before the wait.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const long long vecs = p.cols / 8, total = used_rows(p.offsets, p.experts, p.rows) * vecs;
  for (long long i = block_x() * kThreads + thread_x(); i < total; i += grid_x() * kThreads) {
    const long long r = i / vecs, c = (i % vecs) * 8;
    std::uint16_t* at = p.y + r * p.cols + c;
    const float w = load_plain(p.row_weight + r);
    Vec8 v = load_vec8(at);
    for (int j = 0; j < 8; j += 2) {
      const std::uint32_t packed = pack2<BF16>(to_f32<BF16>(v.v[j]) * w, to_f32<BF16>(v.v[j + 1]) * w);
      v.v[j] = static_cast<std::uint16_t>(packed & 0xFFFFu);
      v.v[j + 1] = static_cast<std::uint16_t>(packed >> 16);
    }
    store_vec8(at, v);
  }
}

// bf16 y[r, :] = f32[r, :] (* row_weight[r]), rounded once; eight elements a thread.
GMM_KERNEL(kThreads) round_rows_kernel(const RowsArgs p) {
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  const long long vecs = p.cols / 8, total = used_rows(p.offsets, p.experts, p.rows) * vecs;
  for (long long i = block_x() * kThreads + thread_x(); i < total; i += grid_x() * kThreads) {
    const long long r = i / vecs, c = (i % vecs) * 8;
    const float w = p.row_weight != nullptr ? load_plain(p.row_weight + r) : 1.0f;
    const float* src = p.f32 + r * p.cols + c;
    Vec8 v;
    for (int j = 0; j < 8; j += 2) {
      float a = 0, b = 0;
      load_f32x2(src + j, a, b);
      const std::uint32_t packed = pack2<true>(a * w, b * w);
      v.v[j] = static_cast<std::uint16_t>(packed & 0xFFFFu);
      v.v[j + 1] = static_cast<std::uint16_t>(packed >> 16);
    }
    store_vec8(p.y + r * p.cols + c, v);
  }
}

// One block per expert (grid-stride): its rows' K-major scales to a [kb][n_e] block, and its
// weight scales to rows of kb_pad floats where w_out is given.
GMM_KERNEL(kThreads) scale_layout_kernel(const ScaleLayoutArgs p) {
  // x_scale/h_scale are dispatch's or the up stage's output, like the offsets.
  MOE_GRID_DEPENDENCY_WAIT();
  MOE_LAUNCH_DEPENDENTS();
  for (long long e = block_x(); e < p.experts; e += grid_x()) {
    const int begin = clamp_rows(load_plain(p.offsets + e), p.rows);
    const int end = max(begin, clamp_rows(load_plain(p.offsets + e + 1), p.rows));
    const long long n = end - begin, items = n * p.kb;
    float* dst = p.act_out + cublas::act_scale_base(begin, p.kb, e);
    const float* src = p.act_scale + static_cast<long long>(begin) * p.kb;
    for (long long i = thread_x(); i < items; i += kThreads) {
      const long long r = i / p.kb, b = i % p.kb;
      dst[b * n + r] = load_plain(src + i);
    }
    if (p.w_out == nullptr) continue;
    const long long w_items = static_cast<long long>(p.nb) * p.kb;
    for (long long i = thread_x(); i < w_items; i += kThreads) {
      const long long j = i / p.kb, b = i % p.kb;
      p.w_out[(e * p.nb + j) * p.kb_pad + b] = load_plain(p.w_scale + e * w_items + i);
    }
  }
}

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE::lib
