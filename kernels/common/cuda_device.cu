#include <cuda_runtime.h>

#include <fstream>
#include <thread>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe {

void cuda_check(int err, const char* what) {
  if (err == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(err);
  cudaGetLastError();  // a non-sticky error must not be blamed on the next launch check
  throw Error(std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  cudaGetLastError();
  if (e == cudaSuccess) return n > 0 ? "" : "no CUDA device is visible";
  if (e == cudaErrorNoDevice) return "no CUDA device is visible (CUDA_VISIBLE_DEVICES may hide them)";
  if (e == cudaErrorInsufficientDriver && cuda_driver_version() == "none") return "no NVIDIA driver is installed";
  if (e == cudaErrorInsufficientDriver)
    return "the CUDA driver (" + cuda_driver_version() + ") is older than this build's runtime (" +
           cuda_runtime_version() + "): this binary needs " + cuda_driver_needed() +
           "; update the driver, or build against the installed toolkit (README: older drivers)";
  return std::string("CUDA is unusable here: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear it: no driver is not an error for the caller
    return 0;
  }
  return n;
}

int cuda_current_device() {
  int d = 0;
  cuda_check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}

DeviceInfo cuda_device_info(int ordinal) {
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
  DeviceInfo d;
  d.backend = Backend::cuda;
  d.name = p.name;
  d.ordinal = ordinal;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.smem_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.mem_bytes = p.totalGlobalMem;
  return d;
}

CudaClocks cuda_clocks(int ordinal) {
  CudaClocks c;
  cudaDeviceGetAttribute(&c.sm_khz, cudaDevAttrClockRate, ordinal);
  cudaDeviceGetAttribute(&c.mem_khz, cudaDevAttrMemoryClockRate, ordinal);
  cudaDeviceGetAttribute(&c.mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal);
  cudaGetLastError();
  return c;
}

static std::string version_str(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string cuda_driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess || v == 0) return "none";
  return version_str(v);
}

std::string cuda_runtime_version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return version_str(v);
}

std::string cuda_pci_bus_id(int ordinal) {
  char buf[32] = {};
  cuda_check(cudaDeviceGetPCIBusId(buf, sizeof buf, ordinal), "cudaDeviceGetPCIBusId");
  return buf;
}

std::string nvidia_driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ..."
  const std::size_t k = line.find("Kernel Module");
  if (k == std::string::npos) return "";
  std::size_t b = line.find_first_not_of(' ', k + 13);
  if (b == std::string::npos) return "";
  return line.substr(b, line.find(' ', b) - b);
}

std::string cuda_driver_needed() {
  // Minor-version compatibility: a runtime of major version M runs on any driver of M's first branch.
#if CUDART_VERSION >= 13000
  return "R580 or newer (CUDA " + cuda_runtime_version() + " runtime, linked statically)";
#else
  return "R525 or newer (CUDA " + cuda_runtime_version() + " runtime, linked statically)";
#endif
}

void require_cuda_device(int ordinal) {
  const int n = cuda_device_count();
  if (n == 0)
    throw Error("no usable CUDA device: " + cuda_unavailable_reason() +
                "; run on a machine with an NVIDIA GPU, check CUDA_VISIBLE_DEVICES, or use --backend cpu");
  if (ordinal < 0 || ordinal >= n)
    throw Error("CUDA device " + std::to_string(ordinal) + " does not exist: " + std::to_string(n) +
                " visible (0.." + std::to_string(n - 1) + ")");
}

DeviceInfo cpu_device_info(int threads) {
  DeviceInfo d;
  d.backend = Backend::cpu;
  d.threads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::string model = "unknown";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  d.name = "cpu: " + model;
  return d;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : n_(bytes) {
  if (bytes) cuda_check(cudaMalloc(&p_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr, o.n_ = 0;
  }
  return *this;
}

}  // namespace moe
