#pragma once
// The one place where host code asks the CUDA runtime about a kernel and launches it. Every
// family's launcher goes through here, so
//  - attribute and occupancy queries happen once per (device, kernel, threads, shared memory)
//    and are cached: a timed call never makes one;
//  - every launch is counted, so a bench knows how many kernels a call launches and can tell
//    when CUPTI reports fewer;
//  - tests swap the runtime for a counting fake (no GPU needed).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace moe {

struct CudaRuntimeCalls {
  int (*current_device)();
  int (*sm_count)(int device);
  // Opts the kernel into `smem` bytes of dynamic shared memory (only called when smem > 48 KiB).
  void (*set_max_smem)(const void* func, std::size_t smem);
  int (*blocks_per_sm)(const void* func, int threads, std::size_t smem);
  // grid and block are 1-D; `args` as cudaLaunchKernel takes them.
  void (*launch)(const void* func, unsigned grid, unsigned block, std::size_t smem, void* stream, void** args);
  // cudaOccupancyMaxActiveClusters for a cluster_x by cluster_y cluster of `threads`-thread
  // blocks (the kernel already opted into `smem`). Null in a fake that launches no clusters.
  int (*max_active_clusters)(const void* func, int cluster_x, int cluster_y, int threads, std::size_t smem) = nullptr;
  // The device's L2 bytes. Null in a fake: 0, nothing is sized by it.
  std::size_t (*l2_bytes)(int device) = nullptr;
};

// What the runtime said about one kernel at one launch shape on one device.
struct KernelFacts {
  int sm_count = 0;
  int blocks_per_sm = 0;  // 0: it does not fit on an SM
};

// Cached per (device, func, threads, smem): the first call queries, later ones only look up.
KernelFacts kernel_facts(const void* func, int threads, std::size_t smem);
KernelFacts kernel_facts_on(int device, const void* func, int threads, std::size_t smem);
// The calling thread's current device, through the replaceable runtime.
int launch_device();
// A device's SM count, cached per device.
int cached_sm_count(int device);
// A device's L2 bytes, cached per device (0 where the runtime in use cannot tell).
std::size_t cached_l2_bytes(int device);

// How many clusters of cluster_x by cluster_y blocks can be resident at once (0: none fits),
// cached like kernel_facts; opts the kernel into `smem` first when it needs more than 48 KiB.
int cached_max_active_clusters(const void* func, int cluster_x, int cluster_y, int threads, std::size_t smem);

// Launches through the runtime (cudaLaunchKernel) and counts the launch.
void launch_kernel(const void* func, unsigned grid, unsigned block, std::size_t smem, void* stream, void** args);
template <class... A>
void launch_kernel_args(const void* func, unsigned grid, unsigned block, std::size_t smem, void* stream, A&... a) {
  void* args[] = {static_cast<void*>(&a)...};
  launch_kernel(func, grid, block, smem, stream, args);
}

// A launch made by a library that launches its own kernels (CUTLASS's adapter): counted and
// recorded like the others, so a call's kernel count stays whole.
void count_launch(const void* func, unsigned grid, unsigned block, std::size_t smem);

// Launches made on this thread while a recorder is set (nullptr stops): a bench learns which
// kernels a call launches, for their attributes.
struct LaunchRecord {
  const void* func;
  unsigned grid, block;
  std::size_t smem;
};
void record_launches(std::vector<LaunchRecord>* into);

// Launches made by this process so far (every thread): a bench reads it around a call.
std::uint64_t kernel_launches();
// Runtime calls made so far: queries (current_device excluded) and launches, for tests.
struct CudaCallCounts {
  std::uint64_t sm_count = 0, set_max_smem = 0, blocks_per_sm = 0, launches = 0, max_active_clusters = 0;
};
CudaCallCounts cuda_call_counts();

// Tests: replace the runtime (nullptr restores the real one) and forget the cache.
void set_cuda_runtime_calls_for_testing(const CudaRuntimeCalls* calls);

}  // namespace moe
