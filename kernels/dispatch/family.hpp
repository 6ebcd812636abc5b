#pragma once
#include "moe/family.hpp"

namespace moe {
// The dispatch family's description (kernels/dispatch/family.cpp).
const FamilyDesc& dispatch_family();
}  // namespace moe
