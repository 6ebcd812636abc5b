#include <cuda_runtime.h>

#include "moe/cuda_device.hpp"
#include "tuner/measure/memory_check.hpp"

namespace moe::tuner {

void check_device_fits(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev, double extra_bytes,
                       const std::string& extra_name) {
  cuda_check(cudaSetDevice(dev.ordinal), "cudaSetDevice");
  std::size_t free = 0, total = 0;
  cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  check_device_fits(f, problem, dev, extra_bytes, extra_name, static_cast<double>(free));
}

}  // namespace moe::tuner
