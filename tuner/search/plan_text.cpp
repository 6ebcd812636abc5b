#include "tuner/search/plan_text.hpp"

#include <fmt/format.h>

#include <set>

namespace moe::tuner {

std::string plan_text(const std::vector<SweepUnit>& units, const std::vector<Axis>& axes,
                      const std::vector<std::int64_t>& tokens, Backend backend, const DeviceInfo& dev,
                      const std::string& space, const Shard& shard) {
  const Plan plan = make_plan(units, tokens, backend, dev, space);
  check_plan_runs(plan, backend);
  std::vector<double> costs;
  for (const PlanPoint& p : plan.points) costs.push_back(p.estimate_s);
  const std::vector<int> mine = shard_points(costs, shard.index, shard.count);
  const std::set<int> in_shard(mine.begin(), mine.end());
  std::string t = fmt::format("plan: {} problem{} x {} token count{} on {} ({})\n", units.size(),
                              units.size() == 1 ? "" : "s", tokens.size(), tokens.size() == 1 ? "" : "s", dev.name,
                              backend_name(backend));
  for (const Axis& a : axes) {
    std::string v;
    for (auto& x : a.values) v += (v.empty() ? "" : ",") + x;
    t += fmt::format("axis {}: {} ({} values)\n", a.name, v, a.values.size());
  }
  // One line per unit: its points are consecutive in the plan, one per token count.
  int points = 0, candidates = 0, skipped = 0;
  double seconds = 0;
  for (std::size_t ui = 0; ui < units.size(); ++ui) {
    int n = 0, cands = 0;
    double s = 0;
    std::string skip;
    for (const PlanPoint& p : plan.points) {
      if (p.unit != static_cast<int>(ui) || !in_shard.count(p.index)) continue;
      ++n;
      cands += static_cast<int>(p.candidates.size());
      s += p.estimate_s;
      if (!p.skip.empty()) {
        skip = p.skip;
        ++skipped;
      }
    }
    points += n;
    candidates += cands;
    seconds += s;
    const SweepUnit& u = units[ui];
    const std::string name = u.family->name + (u.axes.empty() ? "" : " " + axes_text(u.axes));
    if (n == 0) continue;
    if (!skip.empty() && cands == 0) t += fmt::format("  {}: skipped: {}\n", name, skip);
    else
      t += fmt::format("  {}: {} point{}, {} candidates, ~{}{}\n", name, n, n == 1 ? "" : "s", cands,
                       human_duration(s), skip.empty() ? "" : " (some token counts skipped: " + skip + ")");
    if (cands > 0) {
      Params shown = u.problem;
      shown.erase("tokens");  // set per point
      t += "      " + shown.str() + "\n";
    }
  }
  t += fmt::format("total: {} points ({} skipped), {} candidates, estimated {}{}; nothing was run (--dry-run)\n", points,
                   skipped, candidates, human_duration(seconds),
                   shard.count > 1 ? fmt::format(" for shard {}/{}", shard.index, shard.count) : "");
  return t;
}

}  // namespace moe::tuner
