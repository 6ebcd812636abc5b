#pragma once
// A second opinion for problems too large for the fp64 reference to cover every row: each
// expert's GEMM by cuBLAS (fp32 accumulation) on the device copies of the inputs, the
// epilogue (silu*up, routed weight) on the host. Compared on every element of the output.
#include "moe/family.hpp"

namespace moe::gmm {

// `device_inputs` are the problem's inputs in device memory, `host_inputs` the same on the
// host (offsets and row weights are read there). Returns the output tensor (h or y_sorted).
// `round_gate_up`: gate and up are rounded to the activations' dtype before silu*up, as the
// wgmma path stores them between its GEMM and its silu*up kernel (two roundings, not one).
Tensor cublas_output(const Params& problem, const RefMap& device_inputs, const TensorMap& host_inputs,
                     bool round_gate_up = false);

// Every element of `got` against the cuBLAS output: both sum in fp32 (in different orders), so
// they differ by output rounding only: <= 1 ulp per element, tight relative L2.
Check compare_to_cublas(const Params& problem, const Tensor& got, const Tensor& cublas);

}  // namespace moe::gmm
