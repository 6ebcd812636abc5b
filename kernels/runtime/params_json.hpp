#pragma once
// Params <-> JSON objects, shared by the table loader, the tuner's files and the worker pipe.
// Integers stay integers, floats stay floats, words stay strings, so a round trip is exact.
#include <nlohmann/json.hpp>

#include "moe/params.hpp"

namespace moe::runtime {

nlohmann::json params_to_json(const Params& p);
// Error naming `what` when the JSON is not an object of numbers and strings.
Params params_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace moe::runtime
