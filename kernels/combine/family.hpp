#pragma once
#include "moe/family.hpp"

namespace moe {
// The combine family's description (kernels/combine/family.cpp).
const FamilyDesc& combine_family();
}  // namespace moe
