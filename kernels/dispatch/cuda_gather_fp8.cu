// Launcher of fp8 dispatch's quantizing gather (cuda_gather_fp8_kernels.cuh).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "dispatch/cuda_gather_fp8_kernels.cuh"
#include "dispatch/cuda_launch.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::dispatch_cuda {

namespace qk = gather_fp8_kernels;

void gather_fp8(const GatherArgs& a, int threads, void* stream) {
  const long long D = a.row_bytes / 2;  // bf16 x
  if (D % 128 || !a.x_scale) throw Error("dispatch gather: fp8 needs hidden a multiple of 128 and x_scale");
  const auto misaligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 != 0; };
  if (misaligned(a.x) || misaligned(a.x_sorted))
    throw Error("dispatch gather: fp8 reads and writes 16 bytes at a time: x and x_sorted must be 16-byte aligned");
  if (a.rows <= 0) return;
  qk::QDev d{static_cast<const std::uint16_t*>(a.x), a.src, static_cast<std::uint8_t*>(a.x_sorted), a.x_scale,
             a.rows, a.slots, a.K, D, a.used_rows, a.ue8m0};
  const void* k = threads == 128   ? reinterpret_cast<const void*>(&qk::quant_gather_kernel<128>)
                  : threads == 256 ? reinterpret_cast<const void*>(&qk::quant_gather_kernel<256>)
                  : threads == 512 ? reinterpret_cast<const void*>(&qk::quant_gather_kernel<512>)
                                   : nullptr;
  if (!k) throw Error("dispatch gather: no fp8 gather of " + std::to_string(threads) + " threads");
  const long long blocks = qk::quant_gather_blocks(a.rows, D, threads);
  if (blocks > 0x7fffffffLL) throw Error("dispatch gather: too many rows for one grid");
  launch_kernel_args(k, static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream), d);
}

}  // namespace moe::dispatch_cuda
