#pragma once
#include "moe/family.hpp"

namespace moe {
// The whole MoE layer (router, dispatch, gmm up, gmm down, combine) as one benchmarkable unit.
const FamilyDesc& layer_family();
}  // namespace moe
