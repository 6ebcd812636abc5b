#pragma once
// What a sweep covers: (family, problem, tokens) points, each with its candidate configs from
// the family's space (or a --space file), a fingerprint of the whole, and the deterministic
// shard partition. Built from FamilyDesc alone: no per-family code.
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "tuner/search.hpp"

namespace moe::tuner {

struct SweepUnit {
  const FamilyDesc* family = nullptr;
  Params problem;  // complete; "tokens" is set per point
};

struct PlanPoint {
  int index = 0;  // in the full (unsharded) plan
  const FamilyDesc* family = nullptr;
  Params problem;  // with tokens
  std::int64_t tokens = 0;
  std::string key;    // "<family>/<problem.str()>"
  std::string label;  // short, for progress lines
  std::vector<Candidate> candidates;
  std::string skip;  // why the point cannot run (the family rejects the problem); no candidates then
};

struct Plan {
  std::vector<PlanPoint> points;
  std::string fingerprint;  // of every point's key and candidate keys
  int total_candidates = 0;
};

// space: "default", "full", or a JSON file holding a list of configs (for every family) or an
// object {family: [configs]}. The default config is always a candidate.
Plan make_plan(const std::vector<SweepUnit>& units, const std::vector<std::int64_t>& tokens, Backend backend,
               const DeviceInfo& dev, const std::string& space);

// Indices of the points shard `index` of `count` runs: every count-th point, so shards are
// disjoint, together complete, and balanced across families and token counts.
std::vector<int> shard_points(int n_points, int index, int count);

// FNV-1a 64 as 16 hex digits: stable across builds and machines.
std::string fingerprint_of(const std::string& text);

}  // namespace moe::tuner
