#pragma once
// What scripts/kernel_report.py needs from the C++ side to read the compiled kernels: the figures
// the families compute (dynamic shared memory, launch threads) at the presets' largest problem,
// so the script never copies a formula.
#include "tuner/json_io.hpp"

namespace moe::tuner {

// {"schema": "moebench/kernel-static@1", "max_experts": {...}, "gmm_tiles": [...]}
json kernel_static_inputs();

}  // namespace moe::tuner
