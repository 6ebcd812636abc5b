#pragma once
// Synthetic routing shared by the families whose inputs start from expert ids:
// uniform, zipf-skewed (expert popularity ~ 1/rank^s, ranks shuffled by seed), or replayed.
#include <cstdint>

#include "common/rng.hpp"
#include "moe/family.hpp"

namespace moe {

// ids [T,K] int32: k distinct routed experts per token drawn from the distribution, then
// S shared slots with ids E+i. Replay takes ids [N,>=k] rows cyclically, or the top-k of
// captured logits [N,E].
Tensor routing_ids(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S,
                   const InputOptions& opt, Rng& rng);

// Logits [T,E] whose softmax/sigmoid favours zipf-popular experts when dist == zipf.
Tensor routing_logits(std::int64_t T, std::int64_t E, DType dtype, const InputOptions& opt,
                      Rng& rng);

// Router-style weights [T,K] f32: positive, renormalised over the k routed slots, 1.0 on shared.
Tensor routing_weights(std::int64_t T, std::int64_t k, std::int64_t S, Rng& rng);

// Random values for activations/weights: normal * scale, rounded to dtype.
Tensor random_tensor(DType dtype, const Shape& shape, Rng& rng, double scale = 1.0);

}  // namespace moe
