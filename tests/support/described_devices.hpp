#pragma once
// Devices described, not detected: the cuda backends' spaces and defaults are host logic, so
// tests check them against an H100's limits on machines without one.
#include "tuner/problem/kernel_static.hpp"

namespace moe::testing {

inline DeviceInfo described_h100() { return tuner::described_hopper("NVIDIA H100 80GB HBM3 (described)"); }

}  // namespace moe::testing
