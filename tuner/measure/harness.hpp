#pragma once
// One problem made concrete: inputs, the reference outputs and the cost; then running any
// config of any backend on it with poisoned outputs and validating the result. The run
// command, the sweep's validation gate and the tests all go through here.
#include <string>

#include "moe/family.hpp"

namespace moe::tuner {

struct Prepared {
  const FamilyDesc* family = nullptr;
  Params problem;  // complete: every problem parameter set
  TensorMap inputs;
  std::vector<TensorSpec> output_specs;
  TensorMap reference;
  Cost cost;
};

// `given` holds inputs the user supplied (.npy); the family makes the rest.
Prepared prepare(const FamilyDesc& f, const Params& problem, const InputOptions& opt, TensorMap given = {});

struct Outcome {
  TensorMap outputs;
  Validation validation;
  std::vector<double> times_us;  // one per repeat, kernel only (steady clock / CUDA events); none on emu
  // emu: why the config's main kernel did not run emulated (the rest of it did, and was checked).
  std::string not_emulated;
  // emu: the kernels the call launched, in order (EmuLaunchLog); empty on the other backends.
  std::vector<std::string> kernels;
};

// Checks the config is complete and valid for the problem (Error otherwise) and returns it completed.
Params complete_config(const FamilyDesc& f, Backend b, const Params& problem, const Params& config,
                       const DeviceInfo& dev);

// Host execution on the cpu backend: outputs poisoned, run, validated against the reference.
Outcome run_cpu(const Prepared& p, const Params& config, int threads, int repeats = 1);

// The emu backend: the cuda kernel sources run by the SIMT emulator on host tensors, once, and
// validated; no times. A kernel that faults under the emulator fails validation, saying how.
Outcome run_emu(const Prepared& p, const Params& config);

// Device execution: inputs copied to device `dev.ordinal`, outputs poisoned there, one run,
// synchronised, copied back and validated. Errors (no device, launch failure) throw.
Outcome run_cuda(const Prepared& p, const Params& config, const DeviceInfo& dev, int repeats = 1);

// The first repeat's outputs are validated; later repeats only add times.
Outcome run_backend(const Prepared& p, Backend b, const Params& config, const DeviceInfo& dev, int repeats = 1);

}  // namespace moe::tuner
