#pragma once
// Judging a backend's routing against the reference (DESIGN 1.1, validation).
#include "moe/family.hpp"
#include "router/spec.hpp"

namespace moe::router {

// Relative closeness under which two selection scores count as a near-tie: exp/sigmoid
// differ by a few ulps across devices, so either order of such experts is right. Relative
// to |s| + |bias| of the experts (the scale of c's rounding error), not to |c|, which can be
// tiny when the bias cancels the score. Group scores get twice that, over their two terms.
inline constexpr double kNearTie = 1e-6;
// Absolute floor of a near-tie: denormal scores carry only a few bits of precision.
inline constexpr double kNearTieFloor = 1e-37;
// weights: relative tolerance (per element and relative L2) against the weights the returned
// ids deserve, plus an absolute floor of kWeightAtol * max(1, |rsf|) for weights near zero.
inline constexpr double kWeightRtol = 1e-5;
inline constexpr double kWeightAtol = 1e-7;

// ids: a row passes when it equals the reference, or when it is a correct selection once
// near-ties are allowed to fall either way: positions may swap experts whose scores are
// near-tied, the k-th slot may hold another near-tied expert, and groups near-tied at the
// topk_group boundary may be exchanged. Ids must be in range, distinct, shared slots exact.
// weights: within kWeightRtol of the reference weights of the ids actually returned.
// Unwritten (poisoned) elements always fail.
Validation validate(const RouterSpec& spec, const TensorMap& in, const TensorMap& got, const TensorMap& ref);

}  // namespace moe::router
