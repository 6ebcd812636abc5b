#pragma once
#include "moe/family.hpp"

namespace moe {
// The router family's description (kernels/router/family.cpp).
const FamilyDesc& router_family();
}  // namespace moe
