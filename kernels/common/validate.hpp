#pragma once
// Comparison helpers shared by the families' validate functions.
#include <string>

#include "moe/family.hpp"

namespace moe {

// Integers (and anything else) compared bit for bit; poison counts as unwritten.
Check compare_exact(const std::string& name, const Tensor& got, const Tensor& ref);

// Floats: relative L2 error over the tensor must be <= rel_l2_tol and each element within
// elem_atol + elem_rtol*|ref|. NaN in got where ref is finite fails; poison counts as unwritten.
Check compare_close(const std::string& name, const Tensor& got, const Tensor& ref,
                    double rel_l2_tol, double elem_rtol, double elem_atol);

// Default tolerances for an output stored as `t` computed from operands of type `t`.
double rel_l2_tolerance(DType t);

Validation make_validation(std::vector<Check> checks);

}  // namespace moe
