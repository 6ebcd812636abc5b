#pragma once
#include "moe/family.hpp"

namespace moe {
// The whole MoE layer (router, dispatch, gmm up, gmm down, combine) as one benchmarkable unit.
const FamilyDesc& layer_family();

// The layer validator's bounds on the sampled tokens of out: relative L2 within
// kLayerRelL2Factor * rel_l2_tolerance(dtype), and per element kLayerAtol + kLayerRtol * |ref|.
// Looser than a stage's: rounding to the dtype after each matmul compounds over two products
// and a weighted sum.
inline constexpr double kLayerRelL2Factor = 2;
inline constexpr double kLayerRtol = 0.1;
inline constexpr double kLayerAtol = 1e-2;
}  // namespace moe
