#pragma once
// JSON forms of the tuner's values, shared by the worker pipe, the journal and results.
#include <nlohmann/json.hpp>

#include "moe/family.hpp"
#include "runtime/params_json.hpp"
#include "tuner/measure/stats.hpp"
#include "tuner/measure/stopping.hpp"

namespace moe::tuner {

using json = nlohmann::json;
using runtime::params_from_json;
using runtime::params_to_json;

json to_json(const Stats& s);
Stats stats_from_json(const json& j);
json to_json(const Validation& v);
json to_json(const StopRule& r);
StopRule stop_rule_from_json(const json& j);

// One JSON document per line; throws Error naming `what` on malformed text.
json parse_line(const std::string& line, const std::string& what);

}  // namespace moe::tuner
