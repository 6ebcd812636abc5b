#pragma once
// What the host needs to know about CUDA devices, usable on machines with none.
#include <cstddef>
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

// 0 when there is no driver, no device, or CUDA_VISIBLE_DEVICES hides them all: never throws.
int cuda_device_count();
// Why cuda_device_count() is 0, in words ("" when it is not): no device is one thing, a driver
// older than this binary's runtime is another, and the second must not pass for the first.
std::string cuda_unavailable_reason();
// The calling thread's current device (cudaGetDevice).
int cuda_current_device();
// Name, SM count, memory, caches, clocks of device `ordinal`.
DeviceInfo cuda_device_info(int ordinal);
// Clock rates in kHz (0 where the driver does not say) and driver/runtime versions.
struct CudaClocks {
  int sm_khz = 0, mem_khz = 0, mem_bus_bits = 0;
};
CudaClocks cuda_clocks(int ordinal);
std::string cuda_driver_version();   // "13.0" or "none"
std::string cuda_runtime_version();  // of the runtime this binary links
// "0000:1B:00.0": how NVML names the device.
std::string cuda_pci_bus_id(int ordinal);
// The installed NVIDIA kernel driver's release ("580.65.06"), from /proc/driver/nvidia/version;
// "" when there is none.
std::string nvidia_driver_release();
// The oldest driver this binary's runtime runs on, in words: "R580 or newer (CUDA 13.x runtime)".
std::string cuda_driver_needed();
// Throws an Error saying there is no usable device, with what to do instead.
void require_cuda_device(int ordinal = 0);

DeviceInfo cpu_device_info(int threads = 0);  // threads 0: hardware concurrency

// RAII device memory; movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

// Throws an Error with the CUDA error's name and the call that failed.
void cuda_check(int err, const char* what);

}  // namespace moe
