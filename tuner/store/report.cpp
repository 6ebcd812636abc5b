#include "tuner/store/report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <set>
#include <vector>

#include "layer/stages.hpp"
#include "moe/error.hpp"
#include "runtime/params_json.hpp"
#include "runtime/table.hpp"
#include "tuner/base/units.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/store/side_by_side.hpp"

namespace moe::tuner {

namespace {

std::string num(const json& j, const char* k, const char* f) {
  if (!j.contains(k) || !j[k].is_number()) return "-";
  return fmt::format(fmt::runtime(f), j[k].get<double>());
}

// "block_m=64;tokens_per_task=16" -> "bm=64;tpt=16": each name of NAME=VALUE pairs separated
// by ',' or ';' to its initials.
std::string initials(const std::string& cfg) {
  std::string out;
  std::size_t b = 0;
  while (b <= cfg.size()) {
    std::size_t e = cfg.find_first_of(",;", b);
    if (e == std::string::npos) e = cfg.size();
    const std::string pair = cfg.substr(b, e - b);
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos) {
      out += pair;
    } else {
      for (std::size_t i = 0; i < eq; ++i)
        if (i == 0 || pair[i - 1] == '_') out += pair[i];
      out += pair.substr(eq);
    }
    if (e < cfg.size()) out += cfg[e];
    b = e + 1;
  }
  return out;
}

// The layer's config as it ran, "WHAT: STAGE=NAME=VALUE;...,..." (with `short_names`, the stage
// configs' names to initials), WHAT being what the candidate asked for: "auto" (a stage from the
// tables), or "default" when every stage was its family's default (the baseline the layer is
// compared with, which is no table's choice). A layer config of explicit stage texts needs no
// word. "auto" alone does not say what was timed.
std::string resolved_text(const json& resolved, const json& asked, bool short_names) {
  const Params stages = params_from_json(resolved, "resolved config");
  std::string t;
  for (auto& [stage, v] : stages.values()) {
    const std::string text = value_str(v);
    t += (t.empty() ? "" : ",") + stage + "=" + (short_names ? initials(text) : text);
  }
  // Stage texts only: the layer's other parameters (pdl=1) are no stage's choice.
  bool any_auto = false, any_stage = false, all_default = true;
  if (asked.is_object())
    for (auto& [stage, v] : asked.items()) {
      if (!v.is_string() || stage == "path") continue;
      any_stage = true;
      any_auto = any_auto || v == "auto";
      all_default = all_default && v == "default";
    }
  all_default = all_default && any_stage;
  return (all_default ? "default: " : any_auto ? "auto: " : "") + t;
}

// Points of results written before "timed" was recorded: every evaluated candidate counted.
int timed_count(const json& p) { return p.value("timed", p.value("evaluated", 0)); }
int not_usable_count(const json& p) { return p.value("not_usable", 0); }

std::string axes_line(const json& axes) {
  std::string t;
  for (auto& [n, v] : axes.items()) t += (t.empty() ? "" : ",") + n + "=" + v.get<std::string>();
  return t;
}

// Per axis given several values: the chosen config's median time across its values, one row
// per kernel, token count and value of the other axes.
std::string axis_tables(const json& results) {
  const json& meta = results.value("meta", json::object());
  std::string md;
  for (auto& axis : meta.value("axes", json::array())) {
    const std::string name = axis.value("name", "");
    const json values = axis.value("values", json::array());
    if (values.size() < 2) continue;
    std::vector<std::string> rows;
    std::map<std::string, std::map<std::string, std::string>> cells;
    for (auto& p : results["points"]) {
      if (!p.contains("axes") || !p["axes"].contains(name)) continue;
      json others = p["axes"];
      others.erase(name);
      const std::string row = fmt::format("| {} | {} | {} |", p.value("kernel", ""), p.value("tokens", 0),
                                          others.empty() ? std::string("-") : axes_line(others));
      if (!cells.count(row)) rows.push_back(row);
      std::string cell = p.value("skipped", false) ? "skipped" : p.contains("error") ? "error" : "-";
      if (p.contains("chosen")) cell = num(p["chosen"], "median_us", "{:.3f}");
      cells[row][p["axes"][name].get<std::string>()] = cell;
    }
    if (rows.empty()) continue;
    md += "\n## across " + name + " (median us of the chosen config)\n\n| kernel | tokens | other axes |";
    std::string rule = "|---|---:|---|";
    for (auto& v : values) {
      md += " " + name + "=" + v.get<std::string>() + " |";
      rule += "---:|";
    }
    md += "\n" + rule + "\n";
    for (auto& row : rows) {
      md += row;
      for (auto& v : values) {
        auto it = cells[row].find(v.get<std::string>());
        md += " " + (it == cells[row].end() ? std::string("-") : it->second) + " |";
      }
      md += "\n";
    }
  }
  return md;
}

// The emu backend validates the cuda kernel sources and times nothing: per point, how many
// configs passed, failed or could not be emulated.
std::string emu_summary(const json& results) {
  const json& meta = results.value("meta", json::object());
  std::string md = fmt::format("# moebench sweep on {} (emu)\n\n", meta.value("device", "?"));
  int ok = 0, not_emulated = 0, bad = 0, space = 0;
  for (auto& p : results["points"]) {
    ok += p.value("validated", 0);
    not_emulated += p.value("not_emulated", 0);
    bad += p.value("not_usable", 0);
    space += p.value("total", 0);
  }
  md += fmt::format("- wall time {}; {} of {} configs validated against the reference under the SIMT emulator, {} not "
                    "emulated, {} not usable\n",
                    human_duration(meta.value("wall_s", 0.0)), ok, space, not_emulated, bad);
  md += "- validation only: the emu backend times nothing (every record's times are null) and writes no config tables\n";
  std::set<std::string> why;
  for (auto& r : results["records"])
    if (r.value("status", "") == "not emulated") why.insert(r.value("error", ""));
  for (auto& w : why) md += "- not emulated: " + w + "\n";
  if (meta.contains("skipped") && !meta["skipped"].empty())
    for (auto& s : meta["skipped"]) md += "- skipped: " + s.get<std::string>() + "\n";
  std::string last;
  for (auto& p : results["points"]) {
    const std::string k = p.value("kernel", "") + "  " + p.value("problem_key", "");
    if (k != last) {
      md += "\n## " + k + "\n\n| tokens | validated | not emulated | not usable |\n|---:|---:|---:|---:|\n";
      last = k;
    }
    md += fmt::format("| {} | {}/{} | {} | {}{} |\n", p.value("tokens", 0), p.value("validated", 0), p.value("total", 0),
                      p.value("not_emulated", 0), p.value("not_usable", 0),
                      p.contains("error") ? " (error: " + p["error"].get<std::string>() + ")" : std::string());
  }
  std::string failing;
  for (auto& r : results["records"]) {
    const std::string st = r.value("status", "");
    if (st == "ok" || st == "not emulated") continue;
    failing += fmt::format("- {} tokens={} {}: {} {}\n", r.value("kernel", ""), r.value("tokens", 0),
                           r.value("config_key", ""), st, r.value("error", ""));
  }
  if (!failing.empty()) md += "\n## configs that failed\n\n" + failing;
  return md;
}

// Per point of one group: the best of ours beside the best peer measured in the same sweep.
template <class ConfigText>
std::string side_by_side_table(const std::vector<const json*>& points, const ConfigText& config_text) {
  std::string md = "\nOurs beside the best peer (peer us / ours us: above 1 ours is faster):\n\n"
                   "| tokens | best of ours | ours us | best peer | peer config | peer us | peer us / ours us |\n"
                   "|---:|---|---:|---|---|---:|---:|\n";
  for (const json* p : points) {
    if (!p->contains("side_by_side")) continue;
    const json& s = (*p)["side_by_side"];
    const json ours = s.value("ours", json()), peer = s.value("peer", json());
    const std::string ours_cfg = ours.is_object() ? config_text(ours, "") : "none of ours measured";
    const std::string ours_us = ours.is_object() ? num(ours, "median_us", "{:.3f}") : "-";
    if (!peer.is_object()) {
      md += fmt::format("| {} | {} | {} | {} | - | - | - |\n", p->value("tokens", 0), ours_cfg, ours_us, kNoPeerMeasured);
      continue;
    }
    const std::string ratio = s.value("peer_over_ours", json()).is_number()
                                  ? fmt::format("{:.2f}x", s["peer_over_ours"].get<double>())
                                  : "- (" + s.value("note", std::string("not comparable")) + ")";
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", p->value("tokens", 0), ours_cfg, ours_us,
                      peer.value("name", std::string("?")), config_text(peer, ""), num(peer, "median_us", "{:.3f}"), ratio);
  }
  return md;
}

std::string text_of(const json& j, const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; }
double number_of(const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0; }

// The chosen median of each stage of a layer record's problem at its token count, from the
// stage points of the same results (a layer sweep tunes them first), in the stages' order;
// empty when the results lack one of them.
std::vector<std::pair<std::string, double>> stage_medians(const json& results, const json& record) {
  std::vector<std::pair<std::string, double>> out;
  try {
    Params L = runtime::params_from_json(record.value("problem", json::object()), "record problem");
    L.set("tokens", record.value("tokens", std::int64_t{0}));
    for (const Stage& st : layer_stages(L)) {
      const std::string key = runtime::problem_key(st.problem);
      const json* found = nullptr;
      for (auto& p : results["points"])
        if (p.value("kernel", "") == st.family && p.value("problem_key", "") == key &&
            p.value("tokens", std::int64_t{0}) == record.value("tokens", std::int64_t{0}) && p.contains("chosen") &&
            p["chosen"].value("median_us", json()).is_number())
          found = &p;
      if (!found) return {};
      out.emplace_back(st.name, (*found)["chosen"]["median_us"].get<double>());
    }
  } catch (const Error&) {
    return {};  // a problem this build does not know: no breakdown, the rest of the table stands
  }
  return out;
}

// Per token count of one group, every timed candidate of a graph-timed kernel (the layer) alone
// (the sweep's timer) beside the same config in a CUDA graph of N calls (as engines run it), with
// the sum of its stages' chosen times where the sweep tuned them.
std::string graph_table(const json& results, const std::vector<const json*>& points) {
  std::map<int, std::vector<const json*>> by_point;
  for (auto& r : results["records"])
    if (r.contains("graph") && r["graph"].is_object() && r.value("status", "") == "ok")
      by_point[r.value("point_index", 0)].push_back(&r);
  std::string rows, not_timed;
  int calls = 0;
  for (const json* p : points) {
    auto it = by_point.find(p->value("point_index", -1));
    if (it == by_point.end()) continue;
    for (const json* r : it->second) {
      const json& g = (*r)["graph"];
      calls = std::max(calls, static_cast<int>(number_of(g, "graph_calls")));
      const std::string alone = num(r->value("stats", json::object()), "median_us", "{:.3f}");
      std::string graph = "-", ratio = "-";
      if (text_of(g, "status") == kGraphOk && g.value("stats", json()).is_object()) {
        graph = num(g["stats"], "median_us", "{:.3f}");
        const double a = number_of(r->value("stats", json::object()), "median_us"), gm = number_of(g["stats"], "median_us");
        if (a > 0 && gm > 0) ratio = fmt::format("{:.2f}", gm / a);
      } else {
        graph = text_of(g, "status");
        not_timed = text_of(g, "status") + ": " + text_of(g, "reason");
      }
      // What the candidate asked of its stages: the tables' choices (the stage points'), every
      // family default (the baseline), or explicit texts (its config key says which).
      std::string asked = text_of(*r, "config_key");
      bool all_auto = true, all_default = true, any_stage = false;
      if (r->value("config", json::object()).is_object())
        for (auto& [k, v] : (*r)["config"].items()) {
          if (!v.is_string() || k == "path") continue;
          any_stage = true;
          all_auto = all_auto && v == "auto";
          all_default = all_default && v == "default";
        }
      if (any_stage && all_auto) asked = "auto (the tuned stages)";
      else if (any_stage && all_default) asked = "default (every stage)";
      std::string stages = "-";
      // The stage points timed the configs the tables give: their sum stands beside "auto" only.
      std::vector<std::pair<std::string, double>> parts;
      if (any_stage && all_auto) parts = stage_medians(results, *r);
      if (!parts.empty()) {
        double sum = 0;
        std::string terms;
        for (auto& [name, us] : parts) {
          sum += us;
          terms += fmt::format("{}{} {:.1f}", terms.empty() ? "" : " + ", name, us);
        }
        stages = fmt::format("{:.3f} ({})", sum, terms);
      }
      // The path: the stages' own kernels, or the decode front in place of router and dispatch.
      const json& cfg = r->value("config", json::object());
      const std::string path = cfg.is_object() && cfg.contains("path") && cfg["path"].is_string()
                                   ? cfg["path"].get<std::string>() : "stages";
      if (path == "decode") stages = "-";  // the stage points time the router and dispatch kernels it replaces
      rows += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r->value("tokens", 0), path, asked,
                          num(*r, "pdl", "{:.0f}"), alone, graph, ratio, stages);
    }
  }
  if (rows.empty()) return "";
  std::string md = fmt::format(
      "\nThe layer alone (timing=alone: the sweep's timer, one call at a time) and as engines run it (timing=graph: {} "
      "calls captured in one CUDA graph, replayed, per call), median us per call; stages: for the tuned stages, the sum "
      "of the stage points' chosen medians at the same token count:\n\n"
      "| tokens | path | config | pdl | alone us | graph us | graph / alone | stages us |\n"
      "|---:|---|---|---:|---:|---:|---:|---|\n",
      calls);
  md += rows;
  if (!not_timed.empty()) md += "\nNot graph-timed: " + not_timed + "\n";
  return md;
}

}  // namespace

std::string markdown_summary(const json& results, std::size_t config_width) {
  const json& meta = results.value("meta", json::object());
  if (meta.value("backend", "") == "emu") return emu_summary(results);
  std::string md;
  std::string timer;
  if (meta.contains("timer")) {
    const std::string mode = meta["timer"].value("mode", ""), used = meta["timer"].value("used", "");
    timer = used.empty() || used == mode ? mode : mode + ", " + used;
  }
  md += fmt::format("# moebench sweep on {} ({})\n\n", meta.value("device", "?"), meta.value("backend", "?"));
  int timed = 0, space = 0, points = 0;
  std::map<std::string, int> bad;
  for (auto& p : results["points"]) {
    timed += timed_count(p);
    space += p.value("total", 0);
    ++points;
  }
  for (auto& r : results["records"])
    if (r.value("status", "") != "ok") ++bad[r.value("status", "")];
  md += fmt::format("- wall time {}{}; {} of {} candidates timed over {} points ({} search, timer {})\n",
                    human_duration(meta.value("wall_s", 0.0)), meta.value("resumed", false) ? " (this run, resumed)" : "",
                    timed, space, points, meta.value("strategy", "?"), timer);
  if (meta.contains("timer") && meta["timer"].contains("notes"))
    for (auto& n : meta["timer"]["notes"]) md += "- timer note: " + n.get<std::string>() + "\n";
  const bool cpu = meta.value("backend", "") == "cpu";
  if (meta.value("copy_bw_gbps", 0.0) > 0)
    md += cpu ? fmt::format("- host memory copy {:.0f} GB/s; no % of peak on the cpu backend: a problem that fits in "
                            "cache moves faster than memory, so the ratio would be no fraction of a peak\n",
                            meta["copy_bw_gbps"].get<double>())
              : fmt::format("- measured copy bandwidth {:.0f} GB/s (100% of peak in the table)\n",
                            meta["copy_bw_gbps"].get<double>());
  if (!bad.empty()) {
    std::string s;
    for (auto& [k, v] : bad) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", v, k);
    md += "- not usable: " + s + " (details in results.json)\n";
  }
  if (meta.contains("skipped") && !meta["skipped"].empty())
    for (auto& s : meta["skipped"]) md += "- skipped: " + s.get<std::string>() + "\n";
  // Group points by kernel and problem, keeping sweep order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (auto& p : results["points"]) {
    // A skipped combination of the axes has no problem to name: its axis values say which it is.
    const std::string k = p.value("kernel", "") + "  " + (p.value("skipped", false) && p.contains("axes") ? axes_line(p["axes"]) : p.value("problem_key", ""));
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&p);
  }
  bool cut = false, above_peak = false;
  // A config as the tables show it: the layer's stages as they ran, abbreviated to the width.
  const auto config_text = [&](const json& c, const std::string& note) {
    const bool resolved = c.contains("resolved_config") && c["resolved_config"].is_object();
    const json asked = c.value("config", json::object());
    std::string cfg = (resolved ? resolved_text(c["resolved_config"], asked, false) : c.value("config_key", "")) + note;
    if (config_width > 3 && cfg.size() > config_width) {
      cfg = (resolved ? resolved_text(c["resolved_config"], asked, true) : initials(c.value("config_key", ""))) + note;
      if (cfg.size() > config_width) cfg = cfg.substr(0, config_width - 3) + "...";
      cut = true;
    }
    return cfg;
  };
  bool any_peer = false;
  for (auto& p : results["points"])
    any_peer = any_peer || (p.contains("side_by_side") && p["side_by_side"].value("peer", json()).is_object());
  if (!any_peer && !results["points"].empty()) md += std::string("- peers: ") + kNoPeerMeasured + " at any point (only moebench's own configs ran)\n";
  for (auto& k : order) {
    md += "\n## " + k + "\n\n";
    // No % of peak column on the cpu backend: there is no peak it would be a fraction of.
    md += std::string("| tokens | chosen config | median us | vs default | GB/s | TFLOP/s | ") + (cpu ? "" : "% of peak | ") +
          "timed | not usable |\n";
    md += std::string("|---:|---|---:|---:|---:|---:|") + (cpu ? "" : "---:|") + "---:|---:|\n";
    for (const json* p : groups[k]) {
      const std::string counts = fmt::format("{}/{} | {}", timed_count(*p), p->value("total", 0), not_usable_count(*p));
      if (!p->contains("chosen")) {
        md += fmt::format("| {} | {} | - | - | - | - | {}{} |\n", p->value("tokens", 0),
                          p->contains("error") ? (p->value("skipped", false) ? "skipped: " : "error: ") + (*p)["error"].get<std::string>()
                          : p->contains("fastest_not_dispatchable")
                              ? "no config runtime dispatch can call (the fastest, " +
                                    (*p)["fastest_not_dispatchable"].value("config_key", "") + ", runs in another backend)"
                              : std::string("no valid config"),
                          cpu ? "" : "- | ", counts);
        continue;
      }
      const json& c = (*p)["chosen"];
      const bool resolved = c.contains("resolved_config") && c["resolved_config"].is_object();
      const std::string key = c.value("config_key", "");
      std::string note;
      if (p->value("kept_default", false)) note = " (default kept: winner within noise)";
      else if (!resolved && p->contains("default") && (*p)["default"].value("config_key", "") == key) note = " (default)";
      if (c.contains("peer")) note += " [" + c["peer"].get<std::string>() + "]";
      if (p->contains("fastest_not_dispatchable")) {
        const json& f = (*p)["fastest_not_dispatchable"];
        note += fmt::format(" (faster: {}{} at {}, which runtime dispatch cannot call)", f.value("config_key", ""),
                            f.contains("peer") ? " [" + f["peer"].get<std::string>() + "]" : std::string(),
                            num(f, "median_us", "{:.3f} us"));
      }
      std::string cfg = config_text(c, note);
      std::string pct = num(*p, "pct_peak", "{:.1f}");
      if (p->contains("pct_peak") && (*p)["pct_peak"].is_number() && (*p)["pct_peak"].get<double>() > 100) {
        pct += " (cache)";
        above_peak = true;
      }
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {}{} |\n", p->value("tokens", 0), cfg,
                        num(c, "median_us", "{:.3f}"), num(*p, "speedup_vs_default", "{:.2f}x"), num(*p, "gbps", "{:.1f}"),
                        num(*p, "tflops", "{:.2f}"), cpu ? "" : pct + " | ", counts);
    }
    if (any_peer) md += side_by_side_table(groups[k], config_text);
    md += graph_table(results, groups[k]);
  }
  md += axis_tables(results);
  if (above_peak)
    md += "\n(cache): faster than the measured copy bandwidth, so the data came from cache (hot timer, or a problem "
          "that fits in L2): not a fraction of the memory peak.\n";
  if (cut)
    md += fmt::format("\nConfigs longer than {} characters are abbreviated here (parameter names to their initials, "
                      "then cut); summary.md and results.json hold them whole.\n",
                      config_width);
  return md;
}

std::string printed_summary(const json& results) { return markdown_summary(results, ::isatty(1) ? 130 : 0); }

}  // namespace moe::tuner
