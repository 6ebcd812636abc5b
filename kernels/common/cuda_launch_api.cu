#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "moe/programmatic_launch.hpp"
#include "runtime/current_device.hpp"

namespace moe {

namespace {

int real_current_device() {
  int d = 0;
  cuda_check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

int real_sm_count(int device) {
  int n = 0;
  cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SM count)");
  return n;
}

std::size_t real_l2_bytes(int device) {
  int n = 0;
  cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2 size)");
  return static_cast<std::size_t>(n);
}

void real_set_max_smem(const void* func, std::size_t smem) {
  cuda_check(cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
             "cudaFuncSetAttribute(max dynamic shared memory)");
}

int real_blocks_per_sm(const void* func, int threads, std::size_t smem) {
  int n = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return n;
}

void real_launch(const void* func, unsigned grid, unsigned block, std::size_t smem, void* stream, void** args) {
  const bool programmatic = programmatic_launch();
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = static_cast<cudaStream_t>(stream);
  // Stream capture records the attribute as a programmatic graph edge (CUDA 12.3 and later).
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = programmatic ? &attr : nullptr;
  cfg.numAttrs = programmatic ? 1 : 0;
  cuda_check(cudaLaunchKernelExC(&cfg, func, args), "kernel launch");
}

int real_max_active_clusters(const void* func, int cluster_x, int cluster_y, int threads, std::size_t smem) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(cluster_x), static_cast<unsigned>(cluster_y), 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(cluster_x);
  cluster.val.clusterDim.y = static_cast<unsigned>(cluster_y);
  cluster.val.clusterDim.z = 1;
  cfg.attrs = &cluster;
  cfg.numAttrs = 1;
  int n = 0;
  cuda_check(cudaOccupancyMaxActiveClusters(&n, func, &cfg), "cudaOccupancyMaxActiveClusters");
  return n;
}

constexpr CudaRuntimeCalls kReal{real_current_device, real_sm_count,          real_set_max_smem, real_blocks_per_sm,
                                 real_launch,         real_max_active_clusters, real_l2_bytes};

std::atomic<const CudaRuntimeCalls*> calls{&kReal};
std::atomic<std::uint64_t> n_sm{0}, n_smem{0}, n_occ{0}, n_launch{0}, n_clusters{0};

struct Cache {
  std::mutex mu;
  std::map<std::tuple<int, const void*, int, std::size_t>, KernelFacts> facts;
  std::map<int, int> sms;
  std::map<int, std::size_t> l2;
  std::map<std::tuple<int, const void*, int, int, int, std::size_t>, int> clusters;
};
Cache& cache() {
  static Cache c;
  return c;
}

// Opt-in is per function, not per size: remember the largest size set so far.
std::map<std::pair<int, const void*>, std::size_t>& smem_set() {
  static std::map<std::pair<int, const void*>, std::size_t> m;
  return m;
}

constexpr std::size_t kDefaultSmem = 48 * 1024;

// Under the cache's lock.
void opt_in_smem(const CudaRuntimeCalls* rt, int device, const void* func, std::size_t smem) {
  if (smem <= kDefaultSmem) return;
  std::size_t& set = smem_set()[{device, func}];
  if (smem > set) {
    ++n_smem;
    rt->set_max_smem(func, smem);
    set = smem;
  }
}

}  // namespace

int launch_device() { return calls.load()->current_device(); }

void require_current_device(int expected, const std::string& what) {
  const int current = launch_device();
  if (current != expected)
    throw Error(what + " was made for CUDA device " + std::to_string(expected) + " but device " +
                std::to_string(current) + " is current: call cudaSetDevice(" + std::to_string(expected) +
                ") before running it, or make one per device");
}

int cached_sm_count(int device) {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  auto it = c.sms.find(device);
  if (it != c.sms.end()) return it->second;
  ++n_sm;
  const int n = calls.load()->sm_count(device);
  c.sms[device] = n;
  return n;
}

std::size_t cached_l2_bytes(int device) {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  if (auto it = c.l2.find(device); it != c.l2.end()) return it->second;
  const CudaRuntimeCalls* rt = calls.load();
  return c.l2[device] = rt->l2_bytes ? rt->l2_bytes(device) : 0;
}

KernelFacts kernel_facts_on(int device, const void* func, int threads, std::size_t smem) {
  const int sms = cached_sm_count(device);
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  const auto key = std::make_tuple(device, func, threads, smem);
  if (auto it = c.facts.find(key); it != c.facts.end()) return it->second;
  const CudaRuntimeCalls* rt = calls.load();
  opt_in_smem(rt, device, func, smem);
  ++n_occ;
  KernelFacts f{sms, rt->blocks_per_sm(func, threads, smem)};
  c.facts[key] = f;
  return f;
}

int cached_max_active_clusters(const void* func, int cluster_x, int cluster_y, int threads, std::size_t smem) {
  const CudaRuntimeCalls* rt = calls.load();
  const int device = rt->current_device();
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  const auto key = std::make_tuple(device, func, cluster_x, cluster_y, threads, smem);
  if (auto it = c.clusters.find(key); it != c.clusters.end()) return it->second;
  if (!rt->max_active_clusters) throw Error("the CUDA runtime in use cannot size clusters (a test's fake runtime)");
  opt_in_smem(rt, device, func, smem);
  ++n_clusters;
  const int n = rt->max_active_clusters(func, cluster_x, cluster_y, threads, smem);
  c.clusters[key] = n;
  return n;
}

KernelFacts kernel_facts(const void* func, int threads, std::size_t smem) {
  return kernel_facts_on(calls.load()->current_device(), func, threads, smem);
}

thread_local std::vector<LaunchRecord>* recorder = nullptr;
thread_local bool programmatic_on = true;

bool programmatic_launch() { return programmatic_on; }

ProgrammaticLaunch::ProgrammaticLaunch(bool on) : before_(programmatic_on) { programmatic_on = on; }
ProgrammaticLaunch::~ProgrammaticLaunch() { programmatic_on = before_; }

void record_launches(std::vector<LaunchRecord>* into) { recorder = into; }

void count_launch(const void* func, unsigned grid, unsigned block, std::size_t smem) {
  ++n_launch;
  if (recorder) recorder->push_back({func, grid, block, smem});
}

void launch_kernel(const void* func, unsigned grid, unsigned block, std::size_t smem, void* stream, void** args) {
  count_launch(func, grid, block, smem);
  calls.load()->launch(func, grid, block, smem, stream, args);
}

std::uint64_t kernel_launches() { return n_launch.load(); }

CudaCallCounts cuda_call_counts() {
  return {n_sm.load(), n_smem.load(), n_occ.load(), n_launch.load(), n_clusters.load()};
}

void set_cuda_runtime_calls_for_testing(const CudaRuntimeCalls* c) {
  calls.store(c ? c : &kReal);
  Cache& ca = cache();
  std::lock_guard lock(ca.mu);
  ca.facts.clear();
  ca.sms.clear();
  ca.l2.clear();
  ca.clusters.clear();
  smem_set().clear();
}

}  // namespace moe
