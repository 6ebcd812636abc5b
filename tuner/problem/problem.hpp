#pragma once
// Assembles a family's problem from a model (preset or HF config) and explicit overrides,
// using the shared parameter names: no per-family code.
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "tuner/problem/axes.hpp"  // parse_token_list

namespace moe::tuner {

// Keys of `model` the family does not have are skipped (a preset describes the whole layer);
// keys of `overrides` it does not have are an Error when `strict` (the user named them).
Params problem_for(const FamilyDesc& f, const Params& model, const Params& overrides, bool strict);

const std::vector<std::int64_t>& default_token_grid();

}  // namespace moe::tuner
