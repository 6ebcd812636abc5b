#pragma once
#include "moe/family.hpp"

namespace moe {
// The gmm family's description (kernels/gmm/family.cpp).
const FamilyDesc& gmm_family();
// Set in the problem passed to the gmm reference to compute every row, however large.
inline constexpr const char* kReferenceEveryRow = "reference_every_row";
}  // namespace moe
