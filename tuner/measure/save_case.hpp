#pragma once
// One run's tensors on disk, and the command that runs it again: `moebench run --save` and a
// sweep's `--save-invalid DIR` (every candidate the gate finds wrong) write the same layout.
#include <string>

#include "tuner/measure/harness.hpp"

namespace moe::tuner {

// Every input as NAME.npy, every output as NAME.npy and every reference output as NAME.ref.npy.
void save_tensors(const std::string& dir, const Prepared& p, const TensorMap& outputs);

// `moebench run FAMILY --set ... --config ... --backend B --input NAME=DIR/NAME.npy ...`: the
// saved inputs with `config`, which reproduces the run.
std::string run_command(const Prepared& p, Backend b, const Params& config, int device, const std::string& dir);

// save_tensors plus the command in DIR/repro.sh; returns the folder written:
// ROOT/<family>/<problem key>/<config key>.
std::string save_invalid_case(const std::string& root, const Prepared& p, const TensorMap& outputs, Backend b,
                              const Params& config, int device);

}  // namespace moe::tuner
