#pragma once
// What scripts/kernel_report.py needs from the C++ side to read the compiled kernels: the figures
// the families compute (dynamic shared memory, launch threads) at the presets' largest problem,
// so the script never copies a formula.
#include <string>

#include <nlohmann/json.hpp>

#include "moe/cuda_device.hpp"

namespace moe::tuner {

using json = nlohmann::json;

// An H100 as the cuda config spaces see it (sm_90: 132 SMs, 227 KB of opt-in shared memory per
// block), described rather than detected: the spaces and defaults are host logic.
DeviceInfo described_hopper(const std::string& name = "sm_90");

// {"schema": "moebench/kernel-static@1", "max_experts": {...}, "gmm_tiles": [...], ...,
//  "layer_kernels": the kernels per layer call (layer_launches.hpp)}
json kernel_static_inputs();

}  // namespace moe::tuner
