#pragma once
// The dispatch family's implementations, callable directly (kernel-level tests use them with
// inputs the family layer would refuse, e.g. out-of-range ids, to check they are dropped).
#include "dispatch/spec.hpp"
#include "moe/family.hpp"

namespace moe {

namespace dispatch_cuda {
struct Launchers;
}
// The cuda backend's run over the given launchers: aligner, then gather.
void run_dispatch(const dispatch_cuda::Launchers& l, const Params& problem, const Params& config, const RefMap& in,
                  const RefMap& out, const LaunchContext& ctx);

// in: x [T,D], ids [T,K]; out: offsets, src, dst, x_sorted, already sized by output_specs.
void dispatch_reference(const DispatchSpec& s, const TensorMap& in, TensorMap& out);

BackendImpl dispatch_cpu_backend();
BackendImpl dispatch_cuda_backend();
BackendImpl dispatch_emu_backend();  // emu.cpp: the cuda kernels under the SIMT emulator

}  // namespace moe
