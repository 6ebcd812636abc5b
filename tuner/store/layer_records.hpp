#pragma once
// After `merge`: the layer (moe-layer) was timed by each shard with its own stage tables, and
// the merged tables may choose other stage configs for the same token counts.
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

// The layer records of `results` whose stage configs the tables under `dir` no longer choose,
// one line each ("moe-layer T=16 (default): gmm_up was {...}, the tables give {...}").
std::vector<std::string> stale_layer_records(const json& results, const std::string& dir);

}  // namespace moe::tuner
