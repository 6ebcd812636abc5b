#pragma once
#include "moe/family.hpp"

namespace moe {
// The combine family's description (kernels/combine/family.cpp).
const FamilyDesc& combine_family();

// What the combine validator allows an output stored as `t`: relative L2 over the tensor and,
// per element, atol + rtol * |reference|. Named here so tests can probe the edges.
struct CombineTolerance {
  double rel_l2, rtol, atol;
};
CombineTolerance combine_tolerance(DType t);
}  // namespace moe
