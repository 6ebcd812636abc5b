// Launchers of the deterministic aligner (kernels in cuda_align_kernels.cuh).
#include <cuda_runtime.h>

#include <string>

#include "moe/cuda_launch_api.hpp"
#include "dispatch/cuda_align_kernels.cuh"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::dispatch_cuda {

namespace {

using namespace align_kernels;

Dev to_dev(const AlignArgs& a) {
  return Dev{a.ids, a.slots, a.e0, a.local, a.E_total, a.A, a.offsets, a.src, a.dst, a.rows};
}

// The shared-memory opt-in, made once per (kernel, size) by the launch API's cache.
template <class Kernel>
const void* allow_smem(Kernel k, int threads, std::size_t bytes) {
  const void* f = reinterpret_cast<const void*>(k);
  if (bytes > 48 * 1024) kernel_facts(f, threads, bytes);
  return f;
}

template <int THREADS>
void launch_single(const Dev& d, cudaStream_t s) {
  const std::size_t smem = single_smem_bytes(THREADS, d.local, d.slots);
  Dev dv = d;
  launch_kernel_args(allow_smem(align_single_kernel<THREADS>, THREADS, smem), 1, THREADS, smem, s, dv);
}

template <int THREADS>
void launch_multi(const Dev& d, int chunk, int* hist, int ctas, cudaStream_t s) {
  const std::size_t hist_smem = hist_smem_bytes(d.local, chunk);
  const std::size_t scan_smem = scan_smem_bytes(d.local);
  const std::size_t scatter_smem = scatter_smem_bytes(THREADS, d.local, chunk);
  const void* hist_k = allow_smem(align_hist_kernel<THREADS>, THREADS, hist_smem);
  const void* scan_k = allow_smem(align_scan_kernel<>, kScanThreads, scan_smem);
  const void* scatter_k = allow_smem(align_scatter_kernel<THREADS>, THREADS, scatter_smem);
  Dev dv = d;
  const unsigned grid = static_cast<unsigned>(ctas);
  if (ctas > 0) launch_kernel_args(hist_k, grid, THREADS, hist_smem, s, dv, chunk, hist, ctas);
  launch_kernel_args(scan_k, 1, kScanThreads, scan_smem, s, dv, hist, ctas);
  if (ctas > 0) launch_kernel_args(scatter_k, grid, THREADS, scatter_smem, s, dv, chunk, hist, ctas);
}

void check_args(const AlignArgs& a) {
  if (a.local < 1 || a.local > 32767 || a.A < 1 || a.slots < 0)
    throw Error("dispatch: " + std::to_string(a.local) + " local experts (at most 32767) or align " +
                std::to_string(a.A) + " cannot be handled");
}

}  // namespace

void align_single(const AlignArgs& a, int threads, void* stream) {
  check_args(a);
  if (a.slots > kSingleMaxSlots)
    throw Error("dispatch: " + std::to_string(a.slots) + " slots are too many for the single-CTA aligner");
  const Dev d = to_dev(a);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (threads) {
    case 512: launch_single<512>(d, s); break;
    case 1024: launch_single<1024>(d, s); break;
    default:
      throw Error("dispatch: the single-CTA aligner has no " + std::to_string(threads) +
                  "-thread instantiation: use align_threads=512 or 1024");
  }
}

void align_multi(const AlignArgs& a, int threads, int chunk, void* workspace, std::size_t workspace_bytes,
                 void* stream) {
  check_args(a);
  if (chunk < 32) throw Error("dispatch: align_chunk " + std::to_string(chunk) + " is too small: use 2048 or 8192");
  const long long ctas = (a.slots + chunk - 1) / chunk;
  if (ctas > 0x7fffffffLL) throw Error("dispatch: too many aligner CTAs: use a larger align_chunk");
  const std::size_t need = multi_workspace_bytes(a.slots, a.local, chunk);
  if (workspace_bytes < need || (need && !workspace))
    throw Error("dispatch: the multi-CTA aligner needs " + std::to_string(need) + " bytes of workspace, got " +
                std::to_string(workspace_bytes));
  const Dev d = to_dev(a);
  const auto s = static_cast<cudaStream_t>(stream);
  auto* hist = static_cast<int*>(workspace);
  switch (threads) {
    case 128: launch_multi<128>(d, chunk, hist, static_cast<int>(ctas), s); break;
    case 256: launch_multi<256>(d, chunk, hist, static_cast<int>(ctas), s); break;
    default:
      throw Error("dispatch: the multi-CTA aligner has no " + std::to_string(threads) +
                  "-thread instantiation: use align_threads=128 or 256");
  }
}

}  // namespace moe::dispatch_cuda
