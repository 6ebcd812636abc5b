#include "tuner/store/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <algorithm>
#include <map>

namespace moe::tuner {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::noisy: return "NOISY";
    case Verdict::slow: return "SLOW";
    case Verdict::fast: return "FAST";
    case Verdict::broken: return "BROKEN";
    default: return "SAME";
  }
}

Verdict verdict(const Stats& base, const Stats& now, double threshold) {
  if (!(base.median_us > 0)) return Verdict::noisy;
  const double ratio = now.median_us / base.median_us;
  if (std::abs(ratio - 1) <= threshold) return Verdict::same;
  const bool overlap = now.q1_us <= base.q3_us && base.q1_us <= now.q3_us;
  if (overlap) return Verdict::noisy;
  return ratio > 1 ? Verdict::slow : Verdict::fast;
}

int CompareReport::count(Verdict v) const {
  int n = 0;
  for (auto& r : rows) n += r.v == v;
  return n;
}

static std::string record_key(const json& r) {
  return r.value("kernel", "") + "|" + r.value("problem_key", "") + "|" + std::to_string(r.value("tokens", 0LL)) + "|" +
         r.value("config_key", "");
}

// The meta fields that change timings without any change of code.
static std::vector<std::string> setting_differences(const json& base, const json& now) {
  std::vector<std::string> diffs;
  const json& mb = base.contains("meta") ? base["meta"] : json::object();
  const json& mn = now.contains("meta") ? now["meta"] : json::object();
  const auto text = [](const json& m, const char* field) -> std::string {
    if (!m.contains(field)) return "";
    const json& v = m[field];
    if (v.is_object()) return v.value("used", v.value("mode", v.dump()));  // timer: {mode, used}
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (const char* field : {"device", "backend", "threads", "timer", "driver", "cuda_runtime", "dist"}) {
    const std::string x = text(mb, field), y = text(mn, field);
    if (!x.empty() && !y.empty() && x != y) diffs.push_back(std::string(field) + ": " + x + " vs " + y);
  }
  return diffs;
}

static std::string point_key(const json& p) {
  return p.value("kernel", "") + "|" + p.value("problem_key", "") + "|" + std::to_string(p.value("tokens", 0LL));
}

// The side-by-side ratio of a point, or null when it has none.
static const json* peer_ratio(const json& p) {
  if (!p.contains("side_by_side")) return nullptr;
  const json& s = p["side_by_side"];
  return s.value("peer_over_ours", json()).is_number() && s.value("peer", json()).is_object() ? &s : nullptr;
}

static std::vector<PeerRow> peer_rows(const json& base, const json& now) {
  // Pointers into the files' own points: json::value would hand out a copy that dies here.
  static const json none = json::array();
  const json& base_points = base.contains("points") ? base["points"] : none;
  const json& now_points = now.contains("points") ? now["points"] : none;
  std::map<std::string, const json*> n;
  for (auto& p : now_points)
    if (const json* s = peer_ratio(p)) n[point_key(p)] = s;
  std::vector<PeerRow> rows;
  for (auto& p : base_points) {
    const json* b = peer_ratio(p);
    auto it = n.find(point_key(p));
    if (!b || it == n.end()) continue;
    PeerRow r;
    r.kernel = p.value("kernel", "");
    r.problem_key = p.value("problem_key", "");
    r.tokens = p.value("tokens", 0LL);
    r.base_peer = (*b)["peer"].value("name", "");
    r.now_peer = (*it->second)["peer"].value("name", "");
    r.base_ratio = (*b)["peer_over_ours"].get<double>();
    r.now_ratio = (*it->second)["peer_over_ours"].get<double>();
    rows.push_back(std::move(r));
  }
  return rows;
}

CompareReport compare_results(const json& base, const json& now, double threshold) {
  std::map<std::string, const json*> b, n;
  std::vector<std::string> order;
  for (auto& r : base["records"]) {
    const std::string k = record_key(r);
    if (!b.count(k)) order.push_back(k);
    b[k] = &r;
  }
  for (auto& r : now["records"]) n[record_key(r)] = &r;
  CompareReport rep;
  double log_sum = 0;
  int logs = 0;
  for (auto& k : order) {
    auto it = n.find(k);
    if (it == n.end()) {
      ++rep.only_base;
      continue;
    }
    const json &rb = *b[k], &rn = *it->second;
    if (rb.value("status", "") != "ok") continue;  // nothing to compare against
    CompareRow row;
    row.kernel = rb.value("kernel", "");
    row.problem_key = rb.value("problem_key", "");
    row.config_key = rb.value("config_key", "");
    row.tokens = rb.value("tokens", 0LL);
    row.base = stats_from_json(rb.value("stats", json::object()));
    row.now = stats_from_json(rn.value("stats", json::object()));
    row.status_now = rn.value("status", "");
    const json axes = rb.value("axes", json::object());  // items() of a temporary would dangle
    for (auto& [name, v] : axes.items())
      if (v.is_string()) row.axes.push_back({name, v.get<std::string>()});
    if (row.status_now != "ok" || row.now.n == 0) {
      row.v = Verdict::broken;
      row.ratio = 0;
    } else {
      row.ratio = row.base.median_us > 0 ? row.now.median_us / row.base.median_us : 0;
      row.v = verdict(row.base, row.now, threshold);
      if (row.ratio > 0) {
        log_sum += std::log(row.ratio);
        ++logs;
      }
    }
    rep.rows.push_back(std::move(row));
  }
  for (auto& [k, r] : n) rep.only_new += b.count(k) ? 0 : 1;
  rep.geomean = logs ? std::exp(log_sum / logs) : 1.0;
  rep.setting_differences = setting_differences(base, now);
  rep.peers = peer_rows(base, now);
  return rep;
}

namespace {

// Per (axis, value): how many pairs matched, their verdicts and the geometric mean of new/base,
// so a change that only one expert count or dtype shows stands out.
std::string per_axis_value(const CompareReport& r) {
  struct Tally {
    int n = 0, logs = 0, slow = 0, fast = 0, broken = 0;
    double log_sum = 0;
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Tally> t;
  for (auto& row : r.rows)
    for (auto& av : row.axes) {
      if (!t.count(av)) order.push_back(av);
      Tally& x = t[av];
      ++x.n;
      x.slow += row.v == Verdict::slow;
      x.fast += row.v == Verdict::fast;
      x.broken += row.v == Verdict::broken;
      if (row.v != Verdict::broken && row.ratio > 0) {
        x.log_sum += std::log(row.ratio);
        ++x.logs;
      }
    }
  if (order.empty()) return "";
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::string md = "\n| axis | value | matched | SLOW | FAST | BROKEN | geometric mean new/base |\n|---|---|---:|---:|---:|---:|---:|\n";
  for (auto& av : order) {
    const Tally& x = t[av];
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", av.first, av.second, x.n, x.slow, x.fast, x.broken,
                      x.logs ? fmt::format("{:.3f}", std::exp(x.log_sum / x.logs)) : std::string("-"));
  }
  return md;
}

}  // namespace

std::string compare_markdown(const CompareReport& r, double threshold) {
  std::string md = "| kernel | problem | tokens | config | base median us | new median us | change | verdict |\n"
                   "|---|---|---:|---|---:|---:|---:|---|\n";
  // A problem key runs to ~150 characters: the rows name it by a short label, listed below.
  std::vector<std::string> problems;
  const auto label = [&](const std::string& key) {
    auto it = std::find(problems.begin(), problems.end(), key);
    if (it == problems.end()) it = problems.insert(problems.end(), key);
    return "p" + std::to_string(it - problems.begin() + 1);
  };
  for (auto& row : r.rows) {
    const std::string change = row.v == Verdict::broken ? "status " + row.status_now
                                                       : fmt::format("{:+.1f}%", (row.ratio - 1) * 100);
    md += fmt::format("| {} | {} | {} | {} | {:.3f} | {} | {} | {} |\n", row.kernel, label(row.problem_key), row.tokens,
                      row.config_key, row.base.median_us,
                      row.v == Verdict::broken ? std::string("-") : fmt::format("{:.3f}", row.now.median_us), change,
                      verdict_name(row.v));
  }
  if (!r.peers.empty()) {
    md += "\nOurs beside the best peer (peer us / ours us: above 1 ours is faster):\n\n"
          "| kernel | problem | tokens | best peer | base | new |\n|---|---|---:|---|---:|---:|\n";
    for (auto& p : r.peers)
      md += fmt::format("| {} | {} | {} | {} | {:.2f}x | {:.2f}x |\n", p.kernel, label(p.problem_key), p.tokens,
                        p.base_peer == p.now_peer ? p.base_peer : p.base_peer + " / " + p.now_peer, p.base_ratio,
                        p.now_ratio);
  }
  if (!problems.empty()) md += "\n";
  for (std::size_t i = 0; i < problems.size(); ++i) md += fmt::format("- p{}: {}\n", i + 1, problems[i]);
  if (!r.setting_differences.empty())
    md += fmt::format("\nNote: the files were measured with different settings ({}); a change may come from them.\n",
                      fmt::join(r.setting_differences, "; "));
  md += fmt::format(
      "\n{} matched: {} SAME, {} FAST, {} SLOW, {} NOISY, {} BROKEN (threshold {:.1f}%); geometric mean of new/base "
      "{:.3f} ({:+.1f}%)",
      r.rows.size(), r.count(Verdict::same), r.count(Verdict::fast), r.count(Verdict::slow), r.count(Verdict::noisy),
      r.count(Verdict::broken), threshold * 100, r.geomean, (r.geomean - 1) * 100);
  if (r.only_base || r.only_new) md += fmt::format("; {} only in BASE, {} only in NEW", r.only_base, r.only_new);
  md += "\n" + per_axis_value(r);
  return md;
}

}  // namespace moe::tuner
