#pragma once
// What a sweep point is expected to cost, known from the plan alone (no inputs, no timing):
// shards are cut to equal expected time with it.
#include "moe/family.hpp"

namespace moe::tuner {

struct PlanPoint;

// Seconds, from nominal rates of the backend: right in ratio between points (what sharding
// needs), and within a few times in absolute terms, which the ETA (tuner/search/eta.hpp) corrects
// with what the finished points took. It depends on the point and the backend only, so every
// shard of a sweep (and a resumed one) computes the same figures and so the same partition.
double estimated_point_seconds(const PlanPoint& p, Backend backend);

}  // namespace moe::tuner
