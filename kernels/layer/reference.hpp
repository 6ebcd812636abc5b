#pragma once
// The layer's reference (sampled tokens followed through the stage references) and its
// validator; the families of the stages do the arithmetic, this file only chains them.
#include "moe/family.hpp"

namespace moe {

// Tokens the reference computes: all of a small batch, else a spread including both ends.
std::vector<std::int64_t> reference_tokens(std::int64_t T);
void layer_reference(const Params& L, const TensorMap& in, TensorMap& out);
Validation layer_validate(const Params& L, const TensorMap& got, const TensorMap& ref);

}  // namespace moe
