#pragma once
// The dispatch family's implementations, callable directly (kernel-level tests use them with
// inputs the family layer would refuse, e.g. out-of-range ids, to check they are dropped).
#include "dispatch/spec.hpp"
#include "moe/family.hpp"

namespace moe {

// in: x [T,D], ids [T,K]; out: offsets, src, dst, x_sorted, already sized by output_specs.
void dispatch_reference(const DispatchSpec& s, const TensorMap& in, TensorMap& out);

BackendImpl dispatch_cpu_backend();
BackendImpl dispatch_cuda_backend();

}  // namespace moe
