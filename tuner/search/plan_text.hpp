#pragma once
// `sweep --dry-run`: the expanded plan as text, one line per problem (its axis values, token
// counts, candidates and expected time, or why it is skipped), and the totals of this shard.
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/base/units.hpp"
#include "tuner/search/plan.hpp"

namespace moe::tuner {

std::string plan_text(const std::vector<SweepUnit>& units, const std::vector<Axis>& axes,
                      const std::vector<std::int64_t>& tokens, Backend backend, const DeviceInfo& dev,
                      const std::string& space, const Shard& shard);

}  // namespace moe::tuner
