#pragma once
// Host-side interface of the decode front kernel (front_kernels.cuh): routing, alignment and the
// gather of a decode batch in one launch. Free of CUDA headers, so the layer's host code is plain
// C++; cuda_front.cu launches it on a GPU, front_emu.cpp under the emulator.
#include <cstddef>
#include <cstdint>

#include "dispatch/cuda_launch.hpp"
#include "router/cuda_row_args.hpp"
#include "router/cuda_shapes.hpp"

namespace moe::layer_front {

// Every CTA routes the whole batch and aligns it in its own shared memory (a few microseconds of
// work at 64 tokens, done side by side), so no CTA waits for another; the first CTA writes the
// router's and the aligner's outputs, and the CTAs share the gather's rows.
inline constexpr int kThreads = 512;
inline constexpr int kMaxTokens = 64;

// The router row shapes compiled for the front (16-bit logits: the layer's activations), each one
// of the router's own (cuda_shapes.hpp), the first that routes a problem taken.
inline constexpr router::KernelShape kShapes[] = {{32, 8, 4, 2}, {32, 8, 1, 2}, {32, 32, 4, 2}};
inline constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);

struct Args {
  router::kern::Args route;  // the router's arguments; weights and ids point into shared memory
  const void* x = nullptr;   // [T, D] in the activations' dtype (bf16 for fp8)
  void* x_sorted = nullptr;  // [rows, D]: the activations' dtype, or e4m3 codes (fp8)
  float* x_scale = nullptr;  // fp8: [rows, D/128]
  float* weights = nullptr;  // [T, K]
  std::int32_t* ids = nullptr;
  std::int32_t* offsets = nullptr;  // [local + 1]
  std::int32_t* src = nullptr;      // [rows]
  std::int32_t* dst = nullptr;      // [T * K]
  long long rows = 0;               // R as allocated
  long long D = 0;
  int K = 1, e0 = 0, local = 0, E_total = 0, A = 1;
  int row_bytes = 0;  // of x
  int fp8 = 0, ue8m0 = 0;
  // The gmm stages' tile maps, up's then down's (gmm/mma/cuda_tile_map.cuh's layout, for block_m
  // map_bm; null: that stage's kernel takes none, or writes its own), so neither stage launches
  // its schedule kernel. CTA 0 writes them from its offsets.
  std::int32_t* map[2] = {nullptr, nullptr};
  int map_bm[2] = {16, 16}, map_tiles[2] = {0, 0};
  // Down's per-N-tile counters when it folds combine (gmm/mma/combine_fold.cuh): CTA 0 zeroes
  // them, and down counts only after up, which waited for the front, has finished.
  std::int32_t* zero = nullptr;
  int zero_n = 0;
  // l2_prefetch: once routed, the active experts' weights sent toward L2 (prefetch_weights in
  // front_kernels.cuh). w[0] is w13, w[1] w2, each local expert's block w_bytes[j] long (a
  // multiple of 16) and at that stride; null: that matrix is not sent. `budget` bytes in all.
  const unsigned char* w[2] = {nullptr, nullptr};
  long long w_bytes[2] = {0, 0};
  long long budget = 0;
};

// The bytes one prefetch sends: a weight block goes in pieces of this, spread over the grid.
inline constexpr long long kPrefetchPiece = 32 * 1024;

inline constexpr std::int64_t round4(std::int64_t n) { return (n + 3) / 4 * 4; }
// Ints of shared memory: the single-CTA aligner's, then ids, weights, dst, the offsets and the
// count of active experts.
inline std::int64_t smem_ints(std::int64_t local, std::int64_t slots) {
  return round4(static_cast<std::int64_t>(dispatch_cuda::single_smem_bytes(kThreads, local, slots) / 4)) +
         3 * round4(slots) + round4(local + 1) + 4;
}
inline std::size_t smem_bytes(std::int64_t local, std::int64_t slots) {
  return static_cast<std::size_t>(smem_ints(local, slots)) * 4;
}

// Launches kShapes[shape] over `ctas` CTAs (GPU: cuda_front.cu; emulator: front_emu.cpp).
using Launcher = void (*)(const Args& a, int shape, int ctas, void* stream);
void launch_cuda(const Args& a, int shape, int ctas, void* stream);
void launch_emu(const Args& a, int shape, int ctas, void* stream);

}  // namespace moe::layer_front
