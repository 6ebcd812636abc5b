#include "tuner/search/plan.hpp"

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <set>

#include "moe/error.hpp"
#include "tuner/measure/emu_time.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/search/point_cost.hpp"
#include "tuner/search/space_file.hpp"

namespace moe::tuner {

std::string fingerprint_of(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void check_plan_runs(const Plan& plan, Backend backend) {
  // An emulated config at a prefill shape takes hours.
  if (backend == Backend::emu)
    for (const PlanPoint& p : plan.points)
      if (p.skip.empty()) check_emu_time(*p.family, p.problem);
}

std::vector<int> shard_points(const std::vector<double>& costs, int index, int count) {
  if (count < 1 || index < 0 || index >= count) throw Error("shard " + std::to_string(index) + "/" + std::to_string(count) + " is out of range");
  // Longest first, each to the least loaded shard (ties dealt round-robin, in point order):
  // no shard ends more than one point's cost above another, and the result is a function of
  // the costs alone, so every shard computes the same partition.
  std::vector<int> order(costs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<std::size_t>(count), 0.0);
  std::vector<int> r;
  for (std::size_t n = 0; n < order.size(); ++n) {
    // Equal costs (zero for points that cannot run) are dealt round-robin, not all to shard 0.
    int to = static_cast<int>(n % static_cast<std::size_t>(count));
    for (int s = 0; s < count; ++s)
      if (load[s] < load[to]) to = s;
    load[to] += costs[order[n]];
    if (to == index) r.push_back(order[n]);
  }
  std::sort(r.begin(), r.end());
  return r;
}

namespace {

std::vector<Candidate> file_candidates(const json& space, const std::string& path, const FamilyDesc& f, Backend b,
                                       const Params& problem, const DeviceInfo& dev) {
  // read_space_file has checked that every swept family's configs are a list of objects.
  const json* list = &space;
  if (space.is_object()) {
    if (!space.contains(f.name)) return {};
    list = &space[f.name];
  }
  std::vector<Candidate> out;
  for (auto& item : *list) {
    Candidate c;
    c.config = params_from_json(item, "--space " + path + " config");
    try {
      c.config = complete_config(f, b, problem, c.config, dev);
    } catch (const Error& e) {
      c.invalid_reason = e.what();
      // Complete it anyway where possible, so it is recorded under the same key as the space's configs.
      try {
        Params full = c.config;
        const Params def = f.need_backend(b).default_config(problem, dev);
        for (auto& [k, v] : def.values())
          if (!full.has(k)) full.set(k, v);
        c.config = complete(f.need_backend(b).config_params, full, f.name + " config");
      } catch (const Error&) {
      }
    }
    c.key = c.config.str();
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<SweepUnit> merge_repeated_units(std::vector<SweepUnit> units) {
  std::vector<SweepUnit> out;
  std::map<std::string, std::size_t> seen;  // family/problem -> its unit in `out`
  for (SweepUnit& u : units) {
    if (!u.skip.empty()) {
      out.push_back(std::move(u));
      continue;
    }
    const std::string key = u.family->name + "/" + u.problem.str();
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen[key] = out.size();
      out.push_back(std::move(u));
      continue;
    }
    AxisValues& kept = out[it->second].axes;
    std::erase_if(kept, [&](const auto& av) { return std::find(u.axes.begin(), u.axes.end(), av) == u.axes.end(); });
  }
  return out;
}

Plan make_plan(const std::vector<SweepUnit>& units, const std::vector<std::int64_t>& tokens, Backend backend,
               const DeviceInfo& dev, const std::string& space) {
  Plan plan;
  json file;
  const bool from_file = space != "default" && space != "full";
  if (from_file) {
    std::vector<const FamilyDesc*> swept;
    for (const SweepUnit& u : units) swept.push_back(u.family);
    file = read_space_file(space, swept, backend);
  }
  std::string canon;
  for (std::size_t ui = 0; ui < units.size(); ++ui) {
    const SweepUnit& u = units[ui];
    const FamilyDesc& f = *u.family;
    const BackendImpl& impl = f.need_backend(backend);
    // Whether the problem is one at all, at the smallest token count: what fails here fails at
    // every count, and says so once per combination.
    std::string invalid = u.skip;
    if (invalid.empty()) try {
        Params p = u.problem;
        p.set("tokens", std::int64_t{1});
        p = complete(f.problem_params, p, "family '" + f.name + "'");
        if (f.check_problem) f.check_problem(p);
      } catch (const Error& e) {
        invalid = e.what();
      }
    for (std::int64_t t : tokens) {
      PlanPoint pt;
      pt.index = static_cast<int>(plan.points.size());
      pt.unit = static_cast<int>(ui);
      pt.family = &f;
      pt.problem = u.problem;
      pt.problem.set("tokens", t);
      pt.tokens = t;
      pt.key = f.name + "/" + pt.problem.str();
      pt.axes = u.axes;
      // The layer sweeps gmm twice (up and down): the label names the stage.
      pt.label = f.name + (u.problem.has("stage") ? " " + u.problem.s("stage") : "") +
                 (u.axes.empty() ? "" : " " + axes_text(u.axes)) + " T=" + std::to_string(t);
      if (!u.skip.empty()) pt.key = f.name + "/" + axes_text(u.axes) + ",tokens=" + std::to_string(t) + " (no problem)";
      pt.invalid_problem = !invalid.empty();
      try {
        if (!invalid.empty()) throw Error(invalid);
        pt.problem = complete(f.problem_params, pt.problem, "family '" + f.name + "'");
        if (f.check_problem) f.check_problem(pt.problem);
        const Params def = complete_config(
            f, backend, pt.problem, u.baseline.values().empty() ? impl.default_config(pt.problem, dev) : u.baseline, dev);
        std::vector<Candidate> cands;
        if (from_file) {
          cands = file_candidates(file, space, f, backend, pt.problem, dev);
        } else {
          for (const Params& cfg : impl.space(pt.problem, dev, space == "full")) {
            Candidate c;
            c.config = complete(impl.config_params, cfg, f.name + " space config");
            c.key = c.config.str();
            cands.push_back(std::move(c));
          }
        }
        std::set<std::string> seen;
        bool have_default = false;
        for (auto& c : cands) {
          if (!seen.insert(c.key).second) continue;
          c.is_default = c.key == def.str();
          have_default = have_default || c.is_default;
          pt.candidates.push_back(std::move(c));
        }
        if (!have_default) {
          Candidate c;
          c.config = def;
          c.key = def.str();
          c.is_default = true;
          pt.candidates.insert(pt.candidates.begin(), std::move(c));
        }
      } catch (const Error& e) {
        pt.skip = e.what();
        pt.candidates.clear();
      }
      pt.estimate_s = estimated_point_seconds(pt, backend);
      canon += pt.key + (pt.skip.empty() ? "" : " skip") + "\n";
      for (auto& c : pt.candidates) canon += "  " + c.key + (c.is_default ? " *" : "") + "\n";
      plan.total_candidates += static_cast<int>(pt.candidates.size());
      plan.points.push_back(std::move(pt));
    }
  }
  plan.fingerprint = fingerprint_of(std::string(backend_name(backend)) + "\n" + canon);
  return plan;
}

}  // namespace moe::tuner
