#pragma once
#include <memory>
#include <vector>

#include "layer/stage_configs.hpp"
#include "moe/family.hpp"

namespace moe {

// LaunchPlan::kernels of a plan that cannot tell (stages without a plan hook): the bench counts
// the launches at its warm-up instead of checking them against the plan.
inline constexpr int kUnknownKernels = -1;

// A layer call planned once per config: the stages resolved and each stage's own plan (gmm's
// launches, tensor maps), so a timed call only launches.
struct LayerPlan : LaunchPlan {
  std::shared_ptr<const ResolvedLayer> resolved;
  std::vector<std::shared_ptr<const LaunchPlan>> stages;  // per stage; null where it has no plan hook
};

// The layer's plan hook with the stages already resolved (the hook resolves through the
// process cache); `in` are the layer's inputs, read for their shapes only.
std::shared_ptr<const LayerPlan> plan_layer(Backend b, const Params& layer_problem,
                                            std::shared_ptr<const ResolvedLayer> resolved, const RefMap& in);

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
