#include "tuner/store/results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "io/json_text.hpp"
#include "io/read_file.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"
#include "tuner/base/temp_file.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/store/field_types.hpp"
#include "tuner/store/side_by_side.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

namespace {

double rate(double amount, double median_us) { return median_us > 0 ? amount / (median_us * 1e-6) : 0; }

struct Acc {
  json first;  // the first eval line: identity of the record
  std::vector<double> samples;
  json validation, last;
  std::string error, status, reason, timer, note;
  json measured = json::object();  // the latest measurement's kernels, their attributes, GPU state
  int rounds = 0;
  bool early_stop = false;
  // The same candidate in a CUDA graph of `graph_calls` calls (graph-timed units): every round's
  // samples, and the latest round's status and reason.
  bool graph = false;
  std::vector<double> graph_samples;
  std::string graph_status, graph_reason;
  int graph_calls = 0;
};

std::string text_of(const json& j, const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; }

// An eval line's graph measurement (tuner/run/worker.cpp) added to the candidate's.
void add_graph(Acc& a, const json& g) {
  if (!g.is_object()) return;
  a.graph = true;
  if (g.contains("calls") && g["calls"].is_number_integer()) a.graph_calls = g["calls"].get<int>();
  if (g.contains("samples_us") && g["samples_us"].is_array())
    for (auto& x : g["samples_us"])
      if (x.is_number()) a.graph_samples.push_back(x.get<double>());
  a.graph_status = text_of(g, "status");
  a.graph_reason = text_of(g, "reason");
}

// The record's "graph": what its stats are beside, as timing=graph. A status other than ok
// carries the reason and no stats: nothing is invented where no graph ran.
json graph_record(const Acc& a, double bytes, double flops, double peak) {
  json g = {{"timing", "graph"}, {"graph_calls", a.graph_calls}, {"status", a.graph_status}};
  if (!a.graph_reason.empty()) g["reason"] = a.graph_reason;
  if (a.graph_status != kGraphOk || a.graph_samples.empty()) {
    g["stats"] = nullptr;
    return g;
  }
  const Stats st = summarize(a.graph_samples);
  g["timer"] = "graph";
  g["stats"] = to_json(st);
  if (bytes > 0 || flops > 0) {
    g["gbps"] = rate(bytes, st.median_us) / 1e9;
    g["tflops"] = rate(flops, st.median_us) / 1e12;
    if (peak > 0) g["pct_peak"] = 100.0 * g["gbps"].get<double>() / peak;
  }
  return g;
}

// The fastest record with status ok that runtime dispatch can run, timed by `timer` (any when
// empty), other than `besides`; null when there is none.
const json* fastest_callable(const std::vector<const json*>& records, const std::string& timer, const json* besides) {
  const json* best = nullptr;
  for (const json* r : records) {
    if (r == besides || r->value("status", "") != "ok" || !runtime_can_call(*r)) continue;
    if (!timer.empty() && r->value("timer", "") != timer) continue;
    const json& s = r->value("stats", json::object());
    if (!s.is_object() || !s.value("median_us", json()).is_number()) continue;
    if (!best || s["median_us"].get<double>() < (*best)["stats"]["median_us"].get<double>()) best = r;
  }
  return best;
}

}  // namespace

json build_results(const JournalContents& jr, const json& meta) {
  const json& h = jr.header;
  std::map<std::string, json> prep, point;
  std::map<std::pair<int, int>, Acc> acc;  // (point_index, cand_index)
  for (const json& l : jr.lines) {
    const std::string type = l.value("type", "");
    if (type == "prep") prep[l.value("point", "")] = l;
    else if (type == "point") point[l.value("point", "")] = l;
    else if (type == "eval") {
      Acc& a = acc[{l.value("point_index", 0), l.value("cand_index", 0)}];
      if (a.first.is_null()) a.first = l;
      if (l.value("restarted", false)) a.samples.clear();  // taken by another timer: void
      // A retry (--resume measuring a crashed or timed-out candidate again) replaces that round.
      if (l.value("retry", false)) {
        a.error.clear();
        --a.rounds;
      }
      for (auto& s : l.value("samples_us", json::array())) a.samples.push_back(s.get<double>());
      if (l.contains("validation") && !l["validation"].is_null()) a.validation = l["validation"];
      a.status = l.value("status", "");
      if (!l.value("error", "").empty()) a.error = l.value("error", "");
      if (!l.value("reason", "").empty()) a.reason = l.value("reason", "");
      if (!l.value("timer", "").empty()) a.timer = l.value("timer", "");
      if (!l.value("note", "").empty()) a.note = l.value("note", "");
      for (const char* k : {"kernels", "kernel_attrs", "gpu", "throttled", "saved"})
        if (l.contains(k)) a.measured[k] = l[k];
      a.early_stop = l.value("early_stop", false);
      if (l.contains("graph")) add_graph(a, l["graph"]);
      ++a.rounds;
    }
  }
  // On the cpu backend a problem that fits in cache moves faster than the host's memory copy
  // (dispatch reached 480%), so that ratio is no fraction of any peak: GB/s only there.
  const double peak = h.value("backend", "") == "cpu" ? 0.0 : meta.value("copy_bw_gbps", 0.0);
  // emu validates only: its records have no times (null), its points no winner.
  const bool emu = h.value("backend", "") == "emu";
  json records = json::array();
  std::map<std::string, std::map<std::string, json>> by_point;  // point -> config_key -> record
  for (auto& [k, a] : acc) {
    const json& f = a.first;
    const std::string pkey = f.value("point", "");
    json r;
    r["kernel"] = f.value("kernel", "");
    // An eval line names its backend where another backend's worker ran the config (an engine's
    // kernel beside ours); else the sweep's.
    r["backend"] = f.value("backend", h.value("backend", ""));
    r["device"] = h.value("device", "");
    json problem = f.value("problem", json::object());
    r["tokens"] = f.value("tokens", 0);
    json pk = problem;
    pk.erase("tokens");
    r["problem"] = pk;
    r["problem_key"] = f.value("problem_key", "");
    if (point.count(pkey) && point[pkey].contains("axes")) r["axes"] = point[pkey]["axes"];
    r["config"] = f.value("config", json::object());
    r["config_key"] = f.value("config_key", "");
    for (const char* k : {"resolved_config", "config_source"})
      if (f.contains(k)) r[k] = f[k];
    r["is_default"] = f.value("is_default", false);
    if (!f.value("peer", "").empty()) r["peer"] = f["peer"];
    r["status"] = a.status;
    if (!a.error.empty()) r["error"] = a.error;
    r["validation"] = a.validation;
    const Stats st = summarize(a.samples);
    r["stats"] = emu ? json(nullptr) : to_json(st);
    r["rounds"] = a.rounds;
    r["early_stop"] = a.early_stop;
    r["stop_reason"] = a.reason;
    r["timer"] = a.timer;
    if (!a.note.empty()) r["timer_note"] = a.note;
    for (auto& [k, v] : a.measured.items()) r[k] = v;
    if (a.graph) {
      // Graph-timed (the layer): which timing each number is, and the layer config's pdl.
      r["timing"] = "alone";
      if (r["config"].is_object() && r["config"].contains("pdl")) r["pdl"] = r["config"]["pdl"];
      r["graph"] = graph_record(a, prep.count(pkey) ? prep[pkey].value("bytes", 0.0) : 0.0,
                                prep.count(pkey) ? prep[pkey].value("flops", 0.0) : 0.0, peak);
    }
    if (prep.count(pkey) && st.n > 0) {
      const double bytes = prep[pkey].value("bytes", 0.0), flops = prep[pkey].value("flops", 0.0);
      r["bytes"] = bytes;
      r["flops"] = flops;
      r["gbps"] = rate(bytes, st.median_us) / 1e9;
      r["tflops"] = rate(flops, st.median_us) / 1e12;
      if (peak > 0) r["pct_peak"] = 100.0 * r["gbps"].get<double>() / peak;
    }
    r["point_index"] = f.value("point_index", 0);
    by_point[pkey][r["config_key"].get<std::string>()] = r;
    records.push_back(std::move(r));
  }
  double floor = 0.01;
  if (h.contains("settings") && h["settings"].contains("rule") && h["settings"]["rule"].value("max_noise", json()).is_number())
    floor = h["settings"]["rule"]["max_noise"].get<double>();
  json points = json::array();
  std::vector<std::pair<int, json>> ordered;
  for (auto& [pkey, pl] : point) ordered.emplace_back(pl.value("point_index", 0), pl);
  std::sort(ordered.begin(), ordered.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [idx, pl] : ordered) {
    const std::string pkey = pl.value("point", "");
    json p = {{"point", pkey},
              {"point_index", idx},
              {"kernel", pl.value("kernel", "")},
              {"problem_key", pl.value("problem_key", "")},
              {"tokens", pl.value("tokens", 0)},
              {"evaluated", pl.value("evaluated", 0)},
              {"total", pl.value("total", 0)},
              {"rounds", pl.value("rounds", 0)},
              {"budget_hit", pl.value("budget_hit", false)}};
    if (pl.contains("error")) p["error"] = pl["error"];
    if (pl.contains("axes")) p["axes"] = pl["axes"];
    if (pl.contains("skipped")) p["skipped"] = pl["skipped"];
    auto& recs = by_point[pkey];
    // "evaluated" counts every candidate the search tried; only those that ran correctly were timed.
    int ok = 0, not_emulated = 0;
    for (auto& [ck, r] : recs) {
      ok += r.value("status", "") == "ok" ? 1 : 0;
      not_emulated += r.value("status", "") == "not emulated" ? 1 : 0;
    }
    p[emu ? "validated" : "timed"] = ok;
    if (emu) p["not_emulated"] = not_emulated;
    p["not_usable"] = std::max(0, p["evaluated"].get<int>() - ok - not_emulated);
    if (emu) {
      points.push_back(std::move(p));
      continue;
    }
    auto rec = [&](const char* k) -> const json* {
      const std::string ck = pl.value(k, json()).is_string() ? pl[k].get<std::string>() : "";
      auto it = recs.find(ck);
      return it == recs.end() ? nullptr : &it->second;
    };
    auto brief = [](const json& r) {
      json b{{"config", r["config"]}, {"config_key", r["config_key"]}, {"median_us", r["stats"]["median_us"]},
             {"stats", r["stats"]}};
      if (r.contains("resolved_config")) b["resolved_config"] = r["resolved_config"];
      if (r.contains("peer")) b["peer"] = r["peer"];
      return b;
    };
    const json *w = rec("winner"), *ru = rec("runner_up"), *d = rec("default");
    if (d) p["default"] = brief(*d);
    for (const char* k : {"ranked_timer", "unranked_other_timer"})
      if (pl.contains(k)) p[k] = pl[k];
    std::vector<const json*> point_records;
    for (auto& [ck, r] : recs) point_records.push_back(&r);
    p["side_by_side"] = side_by_side(point_records);
    if (w) p["winner"] = brief(*w);
    // The tables ship the fastest correct config whoever wrote it, of those runtime dispatch can
    // run: a faster engine kernel it cannot call is named beside the choice, never chosen.
    if (w && !runtime_can_call(*w)) {
      json n = brief(*w);
      n["backend"] = (*w)["backend"];
      p["fastest_not_dispatchable"] = std::move(n);
      const std::string timer = w->value("timer", "");
      w = fastest_callable(point_records, timer, nullptr);
      if (!w) w = fastest_callable(point_records, "", nullptr);
      if (w && (!ru || ru == w || !runtime_can_call(*ru))) ru = fastest_callable(point_records, w->value("timer", ""), w);
    } else if (w && ru && !runtime_can_call(*ru)) {
      ru = fastest_callable(point_records, w->value("timer", ""), w);
    }
    if (w) {
      const json* chosen = w;
      const json* second = ru;
      bool kept = false;
      // A default timed by another timer is not comparable: it cannot be kept on a tie.
      if (d && d != w && d->value("status", "") == "ok" && d->value("timer", "") == w->value("timer", "") &&
          within_noise(stats_from_json((*w)["stats"]), stats_from_json((*d)["stats"]), floor)) {
        chosen = d;
        second = w;  // keep the measured winner as the runner-up
        kept = true;
      }
      p["chosen"] = brief(*chosen);
      p["kept_default"] = kept;
      if (second) p["runner_up"] = brief(*second);
      if (d && d->value("timer", "") == chosen->value("timer", "")) {
        const double cm = (*chosen)["stats"]["median_us"].get<double>();
        p["speedup_vs_default"] = cm > 0 ? (*d)["stats"]["median_us"].get<double>() / cm : 0.0;
      }
      for (const char* k : {"gbps", "tflops", "pct_peak"})
        if (chosen->contains(k)) p[k] = (*chosen)[k];
    }
    points.push_back(std::move(p));
  }
  json out = {{"schema", kResultsSchema}, {"meta", meta}, {"records", records}, {"points", points}};
  return out;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  // Never a name anyone could plant a symlink at: in a shared folder (tables), another user's
  // link would make this write any file we can.
  const TempFile t = create_temp_beside(path);
  const std::string& tmp = t.path;
  const int fd = t.fd;
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      const std::string why = n < 0 ? std::strerror(errno) : "short write";
      ::unlink(tmp.c_str());
      throw Error("cannot write " + path + ": " + why + " (nothing was replaced)");
    }
    off += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error("cannot move " + tmp + " to " + path + ": " + why);
  }
}

void write_results(const std::string& path, const json& results) {
  write_text_atomic(path, results.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
}

json read_results(const std::string& path_or_dir) {
  std::string path = path_or_dir;
  std::error_code ec;
  if (fs::is_directory(path, ec)) path = (fs::path(path) / "results.json").string();
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    throw Error("results " + path + " " + why + ": give a results.json or the sweep directory holding it");
  std::string text, why;
  if (!io::read_whole_file(path, text, why))
    throw Error("cannot read results " + path + " (" + why + "): give a results.json or the sweep directory holding it");
  io::check_json_text(text, "results " + path, "give a results.json that `moebench sweep` or `moebench merge` wrote");
  json j;
  const std::string what_to_give = ": give a results.json that `moebench sweep` or `moebench merge` wrote";
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    // A journal is one JSON object per line: its first line parses on its own.
    const json line = json::parse(text.substr(0, text.find('\n')), nullptr, false);
    if (line.is_object())
      throw Error(path + " is a sweep journal (one record per line), not a results file: give the results.json beside "
                  "it, or `moebench merge` its folder into one");
    throw Error(path + " is not a " + std::string(kResultsSchema) + " results file (not JSON)" + what_to_give);
  }
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != kResultsSchema ||
      !j.contains("records") || !j["records"].is_array())
    throw Error(path + " is not a " + std::string(kResultsSchema) + " results file" + what_to_give);
  // The fields readers take with json::value, which throws on a wrong type: an edited or foreign
  // file is the user's to fix, not an internal error.
  const auto bad = [&](const std::string& what) {
    return Error(path + ": " + what + "; give a results.json that `moebench sweep` or `moebench merge` wrote");
  };
  if (j.contains("meta") && !j["meta"].is_object()) throw bad("meta is not an object");
  if (const std::string why = field_type_fault(j.value("meta", json::object()), FieldSet::meta); !why.empty())
    throw bad("meta: " + why);
  if (j.contains("points") && !j["points"].is_array()) throw bad("points is not a list");
  // By reference: json::value copies, and a copy per point made the check quadratic in the points.
  const json no_points = json::array();
  const json& points = j.contains("points") ? j["points"] : no_points;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const json& p = points[i];
    if (!p.is_object()) throw bad("point " + std::to_string(i) + " is not an object");
    if (const std::string why = field_type_fault(p, FieldSet::point); !why.empty())
      throw bad("point " + std::to_string(i) + ": " + why);
  }
  for (std::size_t i = 0; i < j["records"].size(); ++i) {
    const json& r = j["records"][i];
    const std::string rec = "record " + std::to_string(i);
    if (!r.is_object()) throw bad(rec + " is not an object");
    if (const std::string why = field_type_fault(r, FieldSet::record); !why.empty()) throw bad(rec + ": " + why);
    if (r.contains("stats")) {
      if (!r["stats"].is_object()) throw bad(rec + ": stats is not an object");
      for (auto& [k, v] : r["stats"].items())
        if (!v.is_number() && !v.is_null()) throw bad(rec + ": stats." + k + " is " + v.dump() + ", not a number");
    }
  }
  return j;
}

static std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string r = "\"";
  for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
  return r + "\"";
}

std::string results_csv(const json& results) {
  std::ostringstream os;
  os.precision(9);
  // Results with graph-timed records (the layer) say per row which timing it is: the record's
  // own (alone) and a second row of its graph measurement; other results keep their columns.
  bool graphs = false;
  for (auto& r : results["records"]) graphs = graphs || (r.contains("graph") && r["graph"].is_object());
  os << "kernel,backend,problem,tokens,config,is_default,status,n,min_us,q1_us,median_us,q3_us,max_us,mean_us,stdev_us,"
        "noise,gbps,tflops,pct_peak,early_stop,error"
     << (graphs ? ",timing,graph_calls,pdl" : "") << "\n";
  auto num = [](const json& j, const char* k) {
    std::ostringstream o;
    o.precision(9);
    if (j.contains(k) && j[k].is_number()) o << j[k].get<double>();
    return o.str();
  };
  // One row: the record's identity, then `status`, `s` (stats), `m` (its rates), the rest.
  auto row = [&](const json& r, const std::string& status, const json& s, const json& m, bool early_stop,
                 const std::string& error) {
    os << csv_field(r.value("kernel", "")) << ',' << csv_field(r.value("backend", "")) << ','
       << csv_field(r.value("problem_key", "")) << ',' << r.value("tokens", 0) << ','
       << csv_field(r.value("config_key", "")) << ',' << (r.value("is_default", false) ? 1 : 0) << ',' << status << ','
       << s.value("n", 0);
    for (const char* k : {"min_us", "q1_us", "median_us", "q3_us", "max_us", "mean_us", "stdev_us", "noise"})
      os << ',' << num(s, k);
    for (const char* k : {"gbps", "tflops", "pct_peak"}) os << ',' << num(m, k);
    os << ',' << (early_stop ? 1 : 0) << ',' << csv_field(error);
  };
  for (auto& r : results["records"]) {
    const json s = r.contains("stats") && r["stats"].is_object() ? r["stats"] : json::object();  // null on emu
    row(r, r.value("status", ""), s, r, r.value("early_stop", false), r.value("error", ""));
    if (!graphs) {
      os << '\n';
      continue;
    }
    const std::string pdl = num(r, "pdl");
    os << ",alone,," << pdl << '\n';
    if (!r.contains("graph") || !r["graph"].is_object()) continue;
    const json& g = r["graph"];
    // A graph that did not run (not capturable, not applicable) has no times: its reason instead.
    const json gs = g.contains("stats") && g["stats"].is_object() ? g["stats"] : json::object();
    const std::string gstatus = text_of(g, "status");
    row(r, r.value("status", "") == "ok" ? gstatus : r.value("status", ""), gs, g, false,
        gstatus == kGraphOk ? std::string() : text_of(g, "reason"));
    os << ",graph," << num(g, "graph_calls") << ',' << pdl << '\n';
  }
  return os.str();
}

}  // namespace moe::tuner
