#pragma once
// What a sweep covers: (family, problem, tokens) points, each with its candidate configs from
// the family's space (or a --space file), a fingerprint of the whole, and the deterministic
// shard partition. Built from FamilyDesc alone: no per-family code.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/problem/axes.hpp"
#include "tuner/search/search.hpp"

namespace moe::tuner {

// A candidate config turned into the explicit one it is timed with.
struct ResolvedConfig {
  Params config;  // what the worker runs
  json source;    // where each part of it came from, for the record
  std::vector<std::string> warnings;
};

struct SweepUnit {
  const FamilyDesc* family = nullptr;
  Params problem;  // complete; "tokens" is set per point
  AxisValues axes;   // its values of the sweep's multi-valued axes (empty for a one-problem sweep)
  std::string skip;  // why this combination of the axes is no problem (then `problem` is empty)
  // Set for a unit whose configs name what other units tune (the layer's "auto" stages): its
  // points run after every other point of the sweep, once the tables those wrote are on disk,
  // and each candidate runs with what this returns for them. `problem` has tokens; `dirs`
  // are the table directories to look in, first first.
  std::function<ResolvedConfig(const Params& problem, const Params& config, const DeviceInfo& dev,
                               const std::vector<std::string>& dirs)>
      resolve;
  // The config the unit's candidates are measured against ("vs default"); empty: the family
  // default. The layer's is every stage at its family default, so the summary shows what the
  // tuned stages bought, where its own default (every stage "auto") would compare it with itself.
  Params baseline = {};
  // Timed a second time as engines run it, N calls in one CUDA graph (the layer): see
  // tuner/measure/graph_timing.hpp.
  bool graph_timed = false;
};

struct PlanPoint {
  int index = 0;  // in the full (unsharded) plan
  int unit = 0;   // its SweepUnit
  const FamilyDesc* family = nullptr;
  Params problem;  // with tokens
  std::int64_t tokens = 0;
  std::string key;    // "<family>/<problem.str()>"
  std::string label;  // short, for progress lines
  AxisValues axes;    // its unit's
  std::vector<Candidate> candidates;
  double estimate_s = 0;  // expected sweep time (tuner/search/point_cost.hpp); 0 when it cannot run
  std::string skip;  // why the point cannot run (the family rejects the problem); no candidates then
  // The family rejects the problem whatever the token count: a combination of the axes that is
  // no problem (--groups 8 with --experts 12), skipped, not failed.
  bool invalid_problem = false;
  // Units with `resolve`: candidate key -> the explicit config it runs with. Filled by the
  // runner when the tables the unit depends on are written; not part of the fingerprint.
  std::map<std::string, ResolvedConfig> resolved;
};

struct Plan {
  std::vector<PlanPoint> points;
  std::string fingerprint;  // of every point's key and candidate keys
  int total_candidates = 0;
};

// Units of one family and problem, from combinations of the axes that differ only in what that
// family does not take (`sweep all --rsf 1,2`: dispatch's problem is the same for both), become
// one, the first, keeping only the axis values they share. Skipped units stay as they are.
std::vector<SweepUnit> merge_repeated_units(std::vector<SweepUnit> units);

// space: "default", "full", or a JSON file holding a list of configs (for every family) or an
// object {family: [configs]}. The default config is always a candidate.
Plan make_plan(const std::vector<SweepUnit>& units, const std::vector<std::int64_t>& tokens, Backend backend,
               const DeviceInfo& dev, const std::string& space);

// Refuses (moe::Error) a plan the sweep cannot run, before anything runs; the sweep and its
// --dry-run both ask, so a dry run never plans what the sweep refuses. On the emu backend: a
// point whose one config would take minutes to emulate (check_emu_time).
void check_plan_runs(const Plan& plan, Backend backend);

// Indices (ascending) of the points shard `index` of `count` runs, given each point's expected
// cost: shards are disjoint, together complete, and of equal expected time within the largest
// point's cost.
std::vector<int> shard_points(const std::vector<double>& costs, int index, int count);

// FNV-1a 64 as 16 hex digits: stable across builds and machines.
std::string fingerprint_of(const std::string& text);

}  // namespace moe::tuner
