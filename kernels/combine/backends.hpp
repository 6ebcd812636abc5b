#pragma once
// The combine family's implementations, callable directly (kernel-level tests feed them
// inputs the family layer would not make, e.g. dst values past the rows).
#include "combine/spec.hpp"
#include "moe/family.hpp"

namespace moe {

// in: y_sorted + dst (ragged) or y (dense), weights, [residual, gamma]; out: out, [residual_out].
void combine_reference(const CombineSpec& s, const TensorMap& in, TensorMap& out);

BackendImpl combine_cpu_backend();
BackendImpl combine_cuda_backend();
BackendImpl combine_emu_backend();  // emu.cpp: the cuda kernel under the SIMT emulator

namespace combine_cuda {
struct Launchers;
}
// The cuda backend's run over the given launchers (one per input dtype).
void run_combine(const combine_cuda::Launchers& l, const Params& problem, const Params& config, const RefMap& in,
                 const RefMap& out, const LaunchContext& ctx);

}  // namespace moe
