// The layer timed as engines run it (N calls in one CUDA graph) beside its time alone: what the
// journal, results.json, results.csv and summary.md say about it, on the cpu backend (where no
// graph exists: not applicable, with the reason, and no number) and from a journal as a GPU
// sweep writes it; resuming keeps the graph measurements and refuses another --graph-calls.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "layer/stages.hpp"
#include "moe/error.hpp"
#include "runtime/params_json.hpp"
#include "runtime/table.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;

namespace {

SweepOptions graph_timed(const fs::path& out, int calls) {
  SweepOptions o = options(out, scale_problem(64), {1, 4});
  o.tables_dir.clear();
  o.units.front().graph_timed = true;
  o.graph_calls = calls;
  return o;
}

std::vector<std::string> csv_lines(const std::string& csv) {
  std::vector<std::string> v;
  std::istringstream in(csv);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(GraphTiming, CpuRecordsSayNotApplicableWithTheReasonAndNoNumber) {
  const fs::path d = moe::testing::fresh_temp_dir("graph-cpu");
  const SweepOutcome out = run_sweep(graph_timed(d / "out", 3));
  const JournalContents j = read_journal((d / "out" / "journal.jsonl").string());
  EXPECT_EQ(j.header["settings"]["graph_calls"], 3);
  int measured = 0;
  for (auto& l : j.lines) {
    if (l.value("type", "") != "eval" || !l.contains("samples_us")) continue;
    ++measured;
    ASSERT_TRUE(l.contains("graph")) << l.dump();
    EXPECT_EQ(l["graph"]["calls"], 3);
    EXPECT_EQ(l["graph"]["status"], kGraphNotApplicable);
    EXPECT_FALSE(l["graph"].contains("samples_us"));
  }
  EXPECT_GT(measured, 0);
  int records = 0;
  for (auto& r : out.results["records"]) {
    if (r.value("status", "") != "ok") continue;
    ++records;
    EXPECT_EQ(r["timing"], "alone");
    EXPECT_FALSE(r.contains("pdl"));  // the scale family's config has none
    EXPECT_GT(r["stats"]["median_us"].get<double>(), 0.0);  // the time alone is measured as before
    const json& g = r["graph"];
    EXPECT_EQ(g["timing"], "graph");
    EXPECT_EQ(g["graph_calls"], 3);
    EXPECT_EQ(g["status"], kGraphNotApplicable);
    EXPECT_NE(g["reason"].get<std::string>().find("cpu backend"), std::string::npos) << g.dump();
    EXPECT_TRUE(g["stats"].is_null()) << g.dump();
    EXPECT_FALSE(g.contains("gbps"));
  }
  EXPECT_GT(records, 0);
  // The CSV: a row per timing, the graph's with its status and reason and no times.
  const auto lines = csv_lines(results_csv(out.results));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find(",error,timing,graph_calls,pdl"), std::string::npos) << lines[0];
  int alone = 0, graph = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].find(",alone,,") != std::string::npos) ++alone;
    if (lines[i].find(",graph,3,") != std::string::npos) {
      ++graph;
      EXPECT_NE(lines[i].find(",not applicable,0,,,,"), std::string::npos) << lines[i];
      EXPECT_NE(lines[i].find("cpu backend"), std::string::npos) << lines[i];
    }
  }
  EXPECT_EQ(alone, static_cast<int>(out.results["records"].size()));
  EXPECT_EQ(graph, records);
  // The summary puts the two side by side and says why there is no graph time.
  const std::string md = markdown_summary(out.results);
  EXPECT_NE(md.find("| tokens | path | config | pdl | alone us | graph us | graph / alone | stages us |"), std::string::npos) << md;
  EXPECT_NE(md.find("| not applicable | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("Not graph-timed: not applicable: the cpu backend"), std::string::npos) << md;
  fs::remove_all(d);
}

TEST(GraphTiming, UnitsNotGraphTimedKeepTheirJournalRecordsAndCsv) {
  const fs::path d = moe::testing::fresh_temp_dir("graph-none");
  SweepOptions o = graph_timed(d / "out", 3);
  o.units.front().graph_timed = false;
  const SweepOutcome out = run_sweep(o);
  const JournalContents j = read_journal((d / "out" / "journal.jsonl").string());
  EXPECT_FALSE(j.header["settings"].contains("graph_calls"));
  for (auto& l : j.lines) EXPECT_FALSE(l.contains("graph")) << l.dump();
  for (auto& r : out.results["records"]) {
    EXPECT_FALSE(r.contains("graph"));
    EXPECT_FALSE(r.contains("timing"));
  }
  const auto lines = csv_lines(results_csv(out.results));
  EXPECT_EQ(lines[0].find("timing"), std::string::npos) << lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i].find(",alone,"), std::string::npos) << lines[i];
  EXPECT_EQ(markdown_summary(out.results).find("alone us"), std::string::npos);
  fs::remove_all(d);
}

TEST(GraphTiming, ResumeKeepsTheGraphFieldsAndRefusesOtherGraphCalls) {
  const fs::path d = moe::testing::fresh_temp_dir("graph-resume");
  SweepOptions o = graph_timed(d / "out", 3);
  const SweepOutcome first = run_sweep(o);
  const std::size_t lines = read_journal((d / "out" / "journal.jsonl").string()).lines.size();
  o.resume = true;
  SweepOptions other = o;
  other.graph_calls = 5;
  const std::string msg = refusal(other);
  EXPECT_NE(msg.find("with other search settings"), std::string::npos) << msg;
  EXPECT_NE(msg.find("graph_calls: 3 vs 5"), std::string::npos) << msg;
  const SweepOutcome again = run_sweep(o);
  EXPECT_EQ(read_journal((d / "out" / "journal.jsonl").string()).lines.size(), lines);  // nothing measured twice
  int n = 0;
  for (auto& r : again.results["records"])
    if (r.contains("graph")) {
      ++n;
      EXPECT_EQ(r["graph"]["status"], kGraphNotApplicable);
      EXPECT_EQ(r["graph"]["graph_calls"], 3);
    }
  int before = 0;
  for (auto& r : first.results["records"]) before += r.contains("graph") ? 1 : 0;
  EXPECT_EQ(n, before);
  EXPECT_GT(n, 0);
  fs::remove_all(d);
}

namespace {

// A journal of one layer point as a GPU sweep writes it: two candidates (pdl=1 timed in a graph
// over two rounds, pdl=0 whose call could not be captured), and the five stage points.
JournalContents gpu_layer_journal(json& layer_problem) {
  moe::Params L = moe::complete(moe::family("moe-layer").problem_params,
                                moe::Params{{"tokens", std::int64_t{4}}, {"experts", std::int64_t{8}},
                                            {"topk", std::int64_t{2}}, {"hidden", std::int64_t{128}},
                                            {"intermediate", std::int64_t{128}}},
                                "layer");
  layer_problem = moe::runtime::params_to_json(L);
  JournalContents j;
  j.header = {{"type", "header"}, {"backend", "cuda"}, {"device", "test GPU"}, {"settings", {{"graph_calls", 10}}}};
  const std::string lkey = "moe-layer/" + L.str();
  j.lines.push_back({{"type", "prep"}, {"point", lkey}, {"point_index", 0}, {"bytes", 2e6}, {"flops", 4e6}});
  auto eval = [&](int cand, std::int64_t pdl, int round, std::vector<double> alone, json graph) {
    return json{{"type", "eval"}, {"point", lkey}, {"point_index", 0}, {"kernel", "moe-layer"},
                {"problem", layer_problem}, {"problem_key", moe::runtime::problem_key(L)}, {"tokens", 4},
                {"cand_index", cand},
                {"config", {{"router", "auto"}, {"dispatch", "auto"}, {"gmm_up", "auto"}, {"gmm_down", "auto"},
                            {"combine", "auto"}, {"pdl", pdl}}},
                {"config_key", "pdl=" + std::to_string(pdl)},
                {"round", round}, {"status", "ok"}, {"validation", {{"ok", true}}}, {"samples_us", alone},
                {"timer", "cupti"}, {"graph", graph}};
  };
  j.lines.push_back(eval(0, 1, 0, {50, 50, 50}, {{"calls", 10}, {"status", "ok"}, {"timer", "graph"}, {"samples_us", {20, 20}}}));
  j.lines.push_back(eval(0, 1, 1, {50}, {{"calls", 10}, {"status", "ok"}, {"timer", "graph"}, {"samples_us", {20}}}));
  j.lines.push_back(eval(1, 0, 0, {80, 80, 80},
                         {{"calls", 10}, {"status", kGraphNotCapturable}, {"reason", "a stage waits on the host"}}));
  j.lines.push_back({{"type", "point"}, {"point", lkey}, {"point_index", 0}, {"kernel", "moe-layer"},
                     {"problem_key", moe::runtime::problem_key(L)}, {"tokens", 4}, {"total", 2}, {"evaluated", 2},
                     {"winner", "pdl=1"}, {"runner_up", "pdl=0"}, {"default", "pdl=1"}});
  int idx = 1;
  double us = 1;
  for (const moe::Stage& st : moe::layer_stages(L)) {
    const std::string key = st.family + "/" + st.problem.str();
    j.lines.push_back({{"type", "eval"}, {"point", key}, {"point_index", idx}, {"kernel", st.family},
                       {"problem_key", moe::runtime::problem_key(st.problem)}, {"tokens", 4}, {"cand_index", 0},
                       {"config", json::object()}, {"config_key", "c"}, {"round", 0}, {"status", "ok"},
                       {"samples_us", {us}}, {"timer", "cupti"}});
    j.lines.push_back({{"type", "point"}, {"point", key}, {"point_index", idx}, {"kernel", st.family},
                       {"problem_key", moe::runtime::problem_key(st.problem)}, {"tokens", 4}, {"total", 1},
                       {"evaluated", 1}, {"winner", "c"}, {"default", "c"}});
    ++idx;
    us += 1;  // 1 + 2 + 3 + 4 + 5 = 15 us over the stages
  }
  return j;
}

}  // namespace

TEST(GraphTiming, GpuJournalGivesGraphStatsCsvRowsAndTheSideBySideSummary) {
  json problem;
  const JournalContents j = gpu_layer_journal(problem);
  const json results = build_results(j, {{"device", "test GPU"}, {"backend", "cuda"}, {"copy_bw_gbps", 1000.0}});
  const json* timed = nullptr;
  const json* refused = nullptr;
  for (auto& r : results["records"]) {
    if (r["config_key"] == "pdl=1") timed = &r;
    if (r["config_key"] == "pdl=0") refused = &r;
  }
  ASSERT_TRUE(timed && refused) << results.dump(1);
  EXPECT_EQ((*timed)["timing"], "alone");
  EXPECT_EQ((*timed)["pdl"], 1);
  EXPECT_DOUBLE_EQ((*timed)["stats"]["median_us"].get<double>(), 50.0);
  const json& g = (*timed)["graph"];
  EXPECT_EQ(g["status"], kGraphOk);
  EXPECT_EQ(g["graph_calls"], 10);
  EXPECT_EQ(g["stats"]["n"], 3);  // both rounds' graph samples
  EXPECT_DOUBLE_EQ(g["stats"]["median_us"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(g["gbps"].get<double>(), 2e6 / 20e-6 / 1e9);  // the point's bytes over the graph's time
  EXPECT_DOUBLE_EQ(g["pct_peak"].get<double>(), 10.0);
  EXPECT_EQ((*refused)["pdl"], 0);
  EXPECT_EQ((*refused)["graph"]["status"], kGraphNotCapturable);
  EXPECT_EQ((*refused)["graph"]["reason"], "a stage waits on the host");
  EXPECT_TRUE((*refused)["graph"]["stats"].is_null());

  const auto lines = csv_lines(results_csv(results));
  bool graph_row = false, refused_row = false;
  for (auto& l : lines) {
    if (l.find("pdl=1,") != std::string::npos && l.find(",graph,10,1") != std::string::npos) {
      graph_row = true;
      EXPECT_NE(l.find(",ok,3,20,20,20,"), std::string::npos) << l;
    }
    if (l.find("pdl=0,") != std::string::npos && l.find(",graph,10,0") != std::string::npos) {
      refused_row = true;
      EXPECT_NE(l.find(",not capturable,0,"), std::string::npos) << l;
      EXPECT_NE(l.find("a stage waits on the host"), std::string::npos) << l;
    }
  }
  EXPECT_TRUE(graph_row && refused_row) << results_csv(results);
  // Every record has its row alone (the stages' only that one), the layer's a graph row too.
  EXPECT_EQ(count(results_csv(results), ",alone,,"), static_cast<int>(results["records"].size()));
  EXPECT_EQ(count(results_csv(results), ",graph,"), 2);

  const std::string md = markdown_summary(results);
  EXPECT_NE(md.find("timing=graph: 10 calls captured in one CUDA graph"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 | stages | auto (the tuned stages) | 1 | 50.000 | 20.000 | 0.40 | 15.000 (router 1.0 + dispatch 2.0 + "
                    "gmm_up 3.0 + gmm_down 4.0 + combine 5.0) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 | stages | auto (the tuned stages) | 0 | 80.000 | not capturable | - | 15.000"), std::string::npos) << md;
  EXPECT_NE(md.find("Not graph-timed: not capturable: a stage waits on the host"), std::string::npos) << md;
}
