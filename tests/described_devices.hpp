#pragma once
// Devices described, not detected: the cuda backends' spaces and defaults are host logic, so
// tests check them against an H100's limits on machines without one.
#include "moe/cuda_device.hpp"

namespace moe::testing {

inline DeviceInfo described_h100() {
  DeviceInfo d;
  d.backend = Backend::cuda;
  d.name = "NVIDIA H100 80GB HBM3 (described)";
  d.sm_count = 132;
  d.cc_major = 9;
  d.smem_optin = 227 * 1024;
  return d;
}

}  // namespace moe::testing
