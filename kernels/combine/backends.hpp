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

}  // namespace moe
