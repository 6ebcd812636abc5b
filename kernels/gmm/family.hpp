#pragma once
#include "moe/family.hpp"

namespace moe {
// The gmm family's description (kernels/gmm/family.cpp).
const FamilyDesc& gmm_family();
}  // namespace moe
