// Launches the library kernels' small kernels (epilogue_kernels.cuh): no cuBLAS in this unit.
#include <cuda_runtime.h>

#include "gmm/cublas/epilogue_kernels.cuh"
#include "gmm/cublas/kernels.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"

namespace moe::gmm::cublas {

namespace {

// Grid-stride loops: a grid this size covers the largest problems in a few passes.
unsigned blocks_for(long long items) {
  const long long b = (items + cuda::lib::kThreads - 1) / cuda::lib::kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

cuda::lib::RowsArgs args_of(const RowsLaunch& a) {
  cuda::lib::RowsArgs p;
  p.y = a.y;
  p.f32 = a.f32;
  p.row_weight = a.row_weight;
  p.offsets = a.offsets;
  p.rows = a.rows;
  p.cols = a.cols;
  p.experts = a.experts;
  return p;
}

}  // namespace

void launch_scale_rows(const RowsLaunch& a, bool bf16, void* stream) {
  // The row count is on the device (offsets[E]): the grid covers every row the tensor has.
  const long long items = static_cast<long long>(a.rows) * (a.cols / 8);
  if (items == 0) return;
  cuda::lib::RowsArgs p = args_of(a);
  auto* kern = bf16 ? &cuda::lib::scale_rows_kernel<true> : &cuda::lib::scale_rows_kernel<false>;
  launch_kernel_args(reinterpret_cast<const void*>(kern), blocks_for(items), cuda::lib::kThreads, 0, stream, p);
  cuda_check(cudaGetLastError(), "gmm library path: routed-weight kernel launch");
}

void launch_round_rows(const RowsLaunch& a, void* stream) {
  const long long items = static_cast<long long>(a.rows) * (a.cols / 8);
  if (items == 0) return;
  cuda::lib::RowsArgs p = args_of(a);
  launch_kernel_args(reinterpret_cast<const void*>(&cuda::lib::round_rows_kernel), blocks_for(items),
                     cuda::lib::kThreads, 0, stream, p);
  cuda_check(cudaGetLastError(), "gmm library path: bf16 rounding kernel launch");
}

void launch_scale_layout(const ScaleLayoutLaunch& a, void* stream) {
  if (a.experts == 0) return;
  cuda::lib::ScaleLayoutArgs p;
  p.act_scale = a.act_scale;
  p.act_out = a.act_out;
  p.w_scale = a.w_scale;
  p.w_out = a.w_out;
  p.offsets = a.offsets;
  p.rows = a.rows;
  p.kb = a.kb;
  p.experts = a.experts;
  p.nb = a.nb;
  p.kb_pad = a.kb_pad;
  const unsigned grid = static_cast<unsigned>(a.experts < 1024 ? a.experts : 1024);
  launch_kernel_args(reinterpret_cast<const void*>(&cuda::lib::scale_layout_kernel), grid, cuda::lib::kThreads, 0,
                     stream, p);
  cuda_check(cudaGetLastError(), "gmm cublaslt: scale-layout kernel launch");
}

}  // namespace moe::gmm::cublas
