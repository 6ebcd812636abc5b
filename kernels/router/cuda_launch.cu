// The router's launcher: picks the compiled kernel for a config and sizes its grid.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "router/cuda.hpp"
#include "router/cuda_shapes.hpp"
#include "router/cuda_table.hpp"

namespace moe::router {

namespace {

const KernelFns* kernel_table() {
  static KernelFns table[kShapeCount];
  static std::once_flag once;
  std::call_once(once, [] {
    fill_kernels_16(table);
    fill_kernels_32(table);
    fill_kernels_wide(table);
    fill_kernels_packed(table);
  });
  return table;
}

int sm_count() { return std::max(cached_sm_count(launch_device()), 1); }

// Resident CTAs per SM for kernel `shape` at `warps` warps, queried once.
int resident_ctas(const KernelFns& fns, int shape, int warps) {
  static std::atomic<int> cached[kShapeCount][kMaxWarps + 1] = {};
  int n = cached[shape][warps].load(std::memory_order_relaxed);
  if (n <= 0) {
    n = std::max(fns.blocks_per_sm(warps * 32), 1);
    cached[shape][warps].store(n, std::memory_order_relaxed);
  }
  return n;
}

void need_aligned(const void* p, std::size_t align, const char* what, const CudaConfig& c) {
  if (reinterpret_cast<std::uintptr_t>(p) % align)
    throw Error(std::string("router cuda: ") + what + " must be " + std::to_string(align) +
                "-byte aligned for vec_bytes=" + std::to_string(c.vec_bytes) + "; pass an aligned buffer or a smaller vec_bytes");
}

}  // namespace

void router_cuda(const RouterSpec& sp, const CudaConfig& c, const void* logits, const float* bias, float* weights,
                 std::int32_t* ids, cudaStream_t stream) {
  const std::string why = cuda_invalid_reason(sp, c);
  if (!why.empty()) throw Error("router cuda config lanes=" + std::to_string(c.lanes) + " epl=" + std::to_string(c.epl) +
                                " vec_bytes=" + std::to_string(c.vec_bytes) + " warps=" + std::to_string(c.warps) +
                                " cannot route " + sp.str() + ": " + why);
  if (sp.tokens <= 0) return;
  if (!logits || !weights || !ids || (sp.bias && !bias))
    throw Error("router cuda: logits, weights, ids (and bias when bias=1) must be device pointers, got null");
  const int shape = cuda_shape_index(sp, c);
  const int vec = kShapes[shape].vec;
  need_aligned(logits, static_cast<std::size_t>(c.vec_bytes), "logits", c);
  if (sp.bias) need_aligned(bias, static_cast<std::size_t>(std::min(vec, 4) * 4), "bias", c);

  const KernelFns& fns = kernel_table()[shape];
  const kern::Args a = make_kernel_args(sp, c, logits, bias, weights, ids);
  const std::int64_t rows_per_cta = std::int64_t{c.warps} * (32 / c.lanes);
  const std::int64_t ctas = (sp.tokens + rows_per_cta - 1) / rows_per_cta;
  // One resident wave at most: CTAs stride over the rows, so more would only queue.
  const std::int64_t wave = std::int64_t{sm_count()} * resident_ctas(fns, shape, c.warps);
  const int grid = static_cast<int>(std::min(ctas, wave));
  fns.launch(a, grid, c.warps * 32, stream);  // launch_kernel checks the launch
}

}  // namespace moe::router
