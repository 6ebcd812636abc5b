// The user-facing scripts, run as a user runs them: scripts/plot.py renders PNGs from a results
// fixture and refuses other files; scripts/ci-perf-check.sh judges fixed results (identical pass,
// 20% slower fail) and runs end to end on the cpu backend against baselines far from any timing
// this machine can produce, so no outcome depends on the machine's speed or load.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "moe/cuda_device.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/store/results.hpp"

namespace fs = std::filesystem;
using moe::tuner::json;

namespace {

const fs::path kSource = MOEBENCH_SOURCE_DIR;
const fs::path kFixtures = kSource / "tests" / "data" / "results";
const fs::path kCpuBaseline = kSource / "results" / "baselines" / "cpu";

using moe::testing::Proc;
using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir("scripts-" + name); }

bool have_matplotlib() {
  static const bool ok = sh("python3 -c 'import matplotlib'").code == 0;
  return ok;
}

#define NEED_MATPLOTLIB()                                                                            \
  if (!have_matplotlib())                                                                             \
  GTEST_SKIP() << "python3 with matplotlib is not importable (scripts/setup.sh installs it)"

Proc plot(const fs::path& results, const fs::path& out, const std::string& more = "") {
  return sh("python3 " + quote(kSource / "scripts" / "plot.py") + " " + quote(results) + " --out " + quote(out) + more);
}

// A real PNG with something drawn on it: the signature, an IHDR chunk, and more than a blank
// canvas's few kilobytes.
void expect_png(const fs::path& p) {
  ASSERT_TRUE(fs::exists(p)) << p;
  const std::string bytes = slurp(p);
  EXPECT_GT(bytes.size(), 8000u) << p << " is suspiciously small";
  ASSERT_GE(bytes.size(), 16u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << p;
  EXPECT_EQ(bytes.substr(12, 4), "IHDR") << p;
}

std::set<std::string> pngs(const fs::path& dir) {
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".png") names.insert(e.path().filename().string());
  return names;
}

Proc ci_check(const std::string& args) {
  return sh("bash " + quote(kSource / "scripts" / "ci-perf-check.sh") + " --moebench " + quote(MOEBENCH_EXE) +
            " --backend cpu " + args);
}

// The results in `from` (a sweep directory) with every time multiplied by `f` (f > 1: slower), as
// `to`/results.json.
void write_scaled_results(const fs::path& from, const fs::path& to, double f) {
  json j = moe::tuner::read_results(from.string());
  auto scale_stats = [f](json& s) {
    for (const char* k : {"min_us", "q1_us", "median_us", "q3_us", "max_us", "mean_us", "stdev_us"})
      if (s.contains(k) && s[k].is_number()) s[k] = s[k].get<double>() * f;
  };
  for (auto& r : j["records"]) {
    scale_stats(r["stats"]);
    for (const char* k : {"gbps", "tflops", "pct_peak"})
      if (r.contains(k) && r[k].is_number()) r[k] = r[k].get<double>() / f;
  }
  for (auto& p : j["points"])
    for (const char* k : {"winner", "runner_up", "default", "chosen"})
      if (p.contains(k)) {
        scale_stats(p[k]["stats"]);
        p[k]["median_us"] = p[k]["stats"]["median_us"];
      }
  fs::create_directories(to);
  moe::tuner::write_results((to / "results.json").string(), j);
}

}  // namespace

TEST(ScriptsPlot, RendersEveryKindFromASweepFixture) {
  NEED_MATPLOTLIB();
  const fs::path out = temp_dir("plot-all");
  const Proc r = plot(kFixtures / "cpu-sweep-all.json", out / "pngs");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::set<std::string> want = {
      "time-router.png",      "peak-router.png",      "space-router-t64.png",   "time-dispatch.png",
      "peak-dispatch.png",    "space-dispatch-t64.png", "time-gmm.png",          "peak-gmm.png",
      "space-gmm-t64.png",    "time-combine.png",     "peak-combine.png",       "space-combine-t64.png",
      "time-moe-layer.png",   "peak-moe-layer.png",   "space-moe-layer-t64.png"};
  EXPECT_EQ(pngs(out / "pngs"), want) << r.out;
  for (auto& name : want) expect_png(out / "pngs" / name);
  // It prints what it wrote, one path a line.
  for (auto& name : want) EXPECT_NE(r.out.find((out / "pngs" / name).string()), std::string::npos) << name;
  fs::remove_all(out);
}

TEST(ScriptsPlot, NamesTheProblemsOfOneFamilyAndPicksTheNearestTokenCount) {
  NEED_MATPLOTLIB();
  const fs::path out = temp_dir("plot-gmm");
  // 20 tokens was not measured: the space plot shows 16, the nearest in log2 distance.
  const Proc r = plot(kFixtures / "cpu-gmm-up-down.json", out, " --tokens 20");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::set<std::string> want = {"time-gmm-routed_weight-0-stage-up.png",     "peak-gmm-routed_weight-0-stage-up.png",
                                      "space-gmm-routed_weight-0-stage-up-t16.png", "time-gmm-routed_weight-1-stage-down.png",
                                      "peak-gmm-routed_weight-1-stage-down.png",    "space-gmm-routed_weight-1-stage-down-t16.png"};
  EXPECT_EQ(pngs(out), want) << r.out;
  for (auto& name : want) expect_png(out / name);
  // A sweep directory works as well as its results.json.
  const fs::path sweep = out / "sweep";
  fs::create_directories(sweep);
  fs::copy_file(kFixtures / "cpu-gmm-up-down.json", sweep / "results.json");
  EXPECT_EQ(plot(sweep, out / "again").code, 0);
  EXPECT_EQ(pngs(out / "again").size(), 6u);
  fs::remove_all(out);
}

// The "chosen config" series is the config each point chose, what the tables hold: at 1 token a
// candidate dropped in an early halving round reads faster on its few samples than the winner;
// at 2 tokens the winner was within noise of the default, so the default was kept.
TEST(ScriptsPlot, ChosenSeriesIsTheSweepsChoiceNotTheLowestMedian) {
  const fs::path out = temp_dir("plot-chosen");
  auto record = [](int tokens, const std::string& key, double median, int n, bool is_default) {
    return json{{"kernel", "scale"}, {"problem_key", "width=64"}, {"problem", {{"width", 64}}}, {"tokens", tokens},
                {"config_key", key}, {"is_default", is_default}, {"status", "ok"},
                {"stats", {{"median_us", median}, {"q1_us", median}, {"q3_us", median}, {"n", n}}}};
  };
  auto point = [](int tokens, const std::string& chosen) {
    return json{{"kernel", "scale"}, {"problem_key", "width=64"}, {"tokens", tokens}, {"chosen", {{"config_key", chosen}}}};
  };
  json results = {{"schema", "moebench/results@1"}, {"meta", {{"device", "cpu: test"}, {"backend", "cpu"}}}};
  results["records"] = {record(1, "tile=16", 12, 40, true), record(1, "tile=4", 10, 40, false),
                        record(1, "tile=64", 9, 3, false),  record(2, "tile=16", 10.05, 40, true),
                        record(2, "tile=4", 10, 40, false), record(2, "tile=64", 15, 3, false)};
  results["points"] = {point(1, "tile=4"), point(2, "tile=16")};
  std::ofstream(out / "results.json") << results.dump();
  std::ofstream(out / "chosen.py") << R"(import json, sys
sys.path.insert(0, sys.argv[1])
import plot
g = plot.group_records(json.load(open(sys.argv[2])))[("scale", "width=64")]
print(" ".join(f"{t}:{g.best_and_default(t)[0]['config_key']}" for t in (1, 2)))
)";
  const Proc r = sh("python3 " + quote(out / "chosen.py") + " " + quote(kSource / "scripts") + " " + quote(out / "results.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "1:tile=4 2:tile=16\n");
  if (have_matplotlib()) {
    const Proc p = plot(out / "results.json", out / "pngs");
    EXPECT_EQ(p.code, 0) << p.out;
    expect_png(out / "pngs" / "time-scale.png");
  }
  fs::remove_all(out);
}

// % of peak above 100 (a hot timer, or a problem in L2) is drawn against a line at 100% that
// says the data came from cache, not as a fraction of the memory peak; a cpu file draws GB/s.
TEST(ScriptsPlot, PeakPlotMarksFiguresAboveTheCopyBandwidth) {
  NEED_MATPLOTLIB();
  const fs::path out = temp_dir("plot-peak");
  auto record = [](int tokens, double pct) {
    return json{{"kernel", "scale"}, {"problem_key", "width=64"}, {"problem", {{"width", 64}}}, {"tokens", tokens},
                {"config_key", "tile=16"}, {"is_default", true}, {"status", "ok"}, {"gbps", 30 * pct},
                {"pct_peak", pct}, {"stats", {{"median_us", 10.0}, {"n", 10}}}};
  };
  json results = {{"schema", "moebench/results@1"}, {"meta", {{"device", "H100"}, {"backend", "cuda"}, {"copy_bw_gbps", 3000}}}};
  results["records"] = {record(1, 150), record(2, 40)};
  std::ofstream(out / "above.json") << results.dump();
  results["records"] = {record(1, 90), record(2, 40)};
  std::ofstream(out / "below.json") << results.dump();
  results["meta"]["backend"] = "cpu";
  results["records"] = {record(1, 480), record(2, 40)};
  std::ofstream(out / "cpu.json") << results.dump();
  // What the peak plot draws: its y label and its texts, read before the figure is saved.
  std::ofstream(out / "peak.py") << R"(import json, sys
sys.path.insert(0, sys.argv[1])
import plot
results = json.load(open(sys.argv[2]))
p = plot.Plotter(results, sys.argv[3], 60)
def save(fig, name):
    ax = fig.axes[0]
    print(ax.get_ylabel(), "|", "; ".join(t.get_text() for t in ax.texts))
    p.plt.close(fig)
p.save = save
for g in plot.group_records(results).values():
    p.peak_plot(g, "")
)";
  auto peak = [&](const char* file) {
    return sh("python3 " + quote(out / "peak.py") + " " + quote(kSource / "scripts") + " " + quote(out / file) + " " +
              quote(out));
  };
  Proc r = peak("above.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("% of peak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("above 100%: served from cache"), std::string::npos) << r.out;
  r = peak("below.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("served from cache"), std::string::npos) << r.out;
  r = peak("cpu.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("% of peak ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s moved"), std::string::npos) << r.out;
  fs::remove_all(out);
}

TEST(ScriptsPlot, RefusesAFileThatIsNotResults) {
  NEED_MATPLOTLIB();
  const fs::path out = temp_dir("plot-bad");
  const auto one_line_error = [](const Proc& r) {
    EXPECT_NE(r.code, 0);
    EXPECT_EQ(r.out.find("Traceback"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "not one line: " << r.out;
    EXPECT_EQ(r.out.rfind("plot.py: error: ", 0), 0u) << r.out;
  };
  // A config table is JSON from moebench, but not results.
  Proc r = plot(kFixtures / "config-table.json", out / "a");
  one_line_error(r);
  EXPECT_NE(r.out.find("not a moebench/results@1 results file"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out / "a") && !pngs(out / "a").empty());
  // Not JSON at all, and a missing file.
  std::ofstream(out / "garbage.json") << "schema: moebench/results@1\n";
  r = plot(out / "garbage.json", out / "b");
  one_line_error(r);
  EXPECT_NE(r.out.find("is not JSON"), std::string::npos) << r.out;
  r = plot(out / "missing.json", out / "c");
  one_line_error(r);
  EXPECT_NE(r.out.find("cannot read"), std::string::npos) << r.out;
  // Results in name only: the schema is right but there are no records.
  std::ofstream(out / "empty.json") << R"({"schema": "moebench/results@1", "meta": {}})";
  one_line_error(plot(out / "empty.json", out / "d"));
  fs::remove_all(out);
}

// The check's logic on fixed results (--results: nothing is timed), so no outcome depends on how
// fast or busy this machine is: identical results pass, 20% slower ones fail.
TEST(ScriptsCiPerfCheck, PassesOnIdenticalResults) {
  const fs::path out = temp_dir("ci-pass");
  const Proc r = ci_check("--results " + quote(kCpuBaseline) + " --out " + quote(out / "new"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ci-perf-check: PASS"), std::string::npos) << r.out;
  // It picked the baseline by device slug and compared every record.
  EXPECT_NE(r.out.find(kCpuBaseline.string()), std::string::npos) << r.out;
  const json fixture = moe::tuner::read_results(kCpuBaseline.string());
  EXPECT_NE(r.out.find(std::to_string(fixture["records"].size()) + " matched: " +
                       std::to_string(fixture["records"].size()) + " SAME"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(out / "new" / "compare.md"));
  // The results given are never touched; --out the same directory is refused.
  EXPECT_EQ(ci_check("--results " + quote(out / "new") + " --out " + quote(out / "new")).code, 2);
  EXPECT_EQ(ci_check("--results " + quote(out / "nothing") + " --out " + quote(out / "x")).code, 2);
  fs::remove_all(out);
}

TEST(ScriptsCiPerfCheck, FailsOnResultsTwentyPercentSlower) {
  const fs::path out = temp_dir("ci-fail");
  write_scaled_results(kCpuBaseline, out / "slower", 1.2);
  // Every median is exactly 20% slower, so at 10% a record is SLOW, or NOISY where its own
  // interquartile range is wider than that, never SAME or FAST.
  int slow = 0, noisy = 0;
  const json fixture = moe::tuner::read_results(kCpuBaseline.string());
  for (auto& rec : fixture["records"]) {
    const json& st = rec["stats"];
    (1.2 * st["q1_us"].get<double>() > st["q3_us"].get<double>() ? slow : noisy)++;
  }
  ASSERT_GT(slow, 0.8 * static_cast<double>(fixture["records"].size())) << "the fixture should be mostly tight";
  const Proc r = ci_check("--baseline " + quote(kCpuBaseline) + " --results " + quote(out / "slower") + " --out " +
                          quote(out / "new") + " --threshold 10%");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("ci-perf-check: FAIL: " + std::to_string(slow) + " record(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(slow + noisy) + " matched: 0 SAME, 0 FAST, " + std::to_string(slow) + " SLOW, " +
                       std::to_string(noisy) + " NOISY, 0 BROKEN"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| SLOW |"), std::string::npos) << r.out;
  // At the cpu default (150%) 20% passes; a kernel 4x slower fails there too.
  EXPECT_EQ(ci_check("--baseline " + quote(kCpuBaseline) + " --results " + quote(out / "slower") + " --out " +
                     quote(out / "new"))
                .code,
            0);
  write_scaled_results(kCpuBaseline, out / "quadruple", 4.0);
  EXPECT_EQ(ci_check("--baseline " + quote(kCpuBaseline) + " --results " + quote(out / "quadruple") + " --out " +
                     quote(out / "new"))
                .code,
            1);
  fs::remove_all(out);
}

TEST(ScriptsCiPerfCheck, RecordsAndChecksTheTunedConfigsOfATable) {
  const fs::path out = temp_dir("ci-tuned");
  const fs::path tables = out / "tables";
  // A table for the router of the fixed cpu problem, as a tuning sweep would ship it.
  const Proc t = sh(std::string(MOEBENCH_EXE) +
                   " sweep router --model qwen3-30b-a3b --experts 8 --topk 2 --tokens 1,64 --backend cpu --threads 1"
                   " --max-time 20ms --quiet --out " +
                   quote(out / "tune") + " --tables " + quote(tables));
  ASSERT_EQ(t.code, 0) << t.out;
  const std::string common = " --tables " + quote(tables) + " --tokens 1,64 --out " + quote(out / "new");
  Proc r = ci_check("--update-baseline --baseline " + quote(out / "base") + common);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "base" / "results.json"));
  ASSERT_TRUE(fs::exists(out / "base" / "tuned" / "results.json")) << r.out;
  const json space = json::parse(slurp(out / "new" / "tuned" / "space.json"));
  ASSERT_TRUE(space.contains("router")) << space.dump();
  EXPECT_FALSE(space.contains("gmm")) << "only the router has a table";
  const json tuned = moe::tuner::read_results((out / "base" / "tuned").string());
  std::set<std::string> kernels;
  for (auto& rec : tuned["records"]) kernels.insert(rec.value("kernel", ""));
  EXPECT_TRUE(kernels.count("router"));

  // End to end with real sweeps, judged against the baseline made 100x slower (pass) and 100x
  // faster (fail): far outside what load on this machine can do to a timing.
  for (const char* part : {"", "tuned"}) write_scaled_results(out / "base" / part, out / "slow-base" / part, 100.0);
  for (const char* part : {"", "tuned"}) write_scaled_results(out / "base" / part, out / "fast-base" / part, 0.01);
  r = ci_check("--baseline " + quote(out / "slow-base") + common);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("## tuned configs"), std::string::npos) << r.out;
  r = ci_check("--baseline " + quote(out / "fast-base") + common + " --attempts 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("| tuned configs | router |"), std::string::npos) << r.out;
  fs::remove_all(out);
}

TEST(ScriptsCiPerfCheck, RefusesToRunWithoutABaselineOrWithBadFlags) {
  const fs::path out = temp_dir("ci-refuse");
  Proc r = ci_check("--baseline " + quote(out / "none") + " --out " + quote(out / "new"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--update-baseline"), std::string::npos) << r.out;
  r = ci_check("--frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  r = ci_check("--attempts 0 --out " + quote(out / "new"));
  EXPECT_EQ(r.code, 2) << r.out;
  // A directory that holds something other than a sweep is never emptied.
  fs::create_directories(out / "precious");
  std::ofstream(out / "precious" / "notes.txt") << "keep me\n";
  r = ci_check("--out " + quote(out / "precious"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(fs::exists(out / "precious" / "notes.txt"));
  // A baseline from another sweep (other token counts) matches nothing: an error, not a pass.
  r = ci_check("--baseline " + quote(kCpuBaseline) + " --tokens 2,3 --out " + quote(out / "new"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no record"), std::string::npos) << r.out;
  fs::remove_all(out);
}

// ---- scripts/gpu-targets.sh + check_targets.py: the issues' performance targets as benchmarks

Proc gpu_targets(const fs::path& targets, const fs::path& out, const std::string& more = "") {
  return sh("MOEBENCH_BIN=" + quote(MOEBENCH_EXE) + " MOEBENCH_TARGETS=" + quote(targets) +
            " MOEBENCH_TARGETS_BACKEND=cpu bash " + quote(kSource / "scripts" / "gpu-targets.sh") + " " + quote(out) +
            more);
}

const json* target_row(const json& report, const std::string& id) {
  for (const json& r : report.at("targets"))
    if (r.at("id") == id) return &r;
  return nullptr;
}

TEST(ScriptsTargets, SweepsJudgesAndResumes) {
  const fs::path dir = temp_dir("targets");
  const fs::path targets = dir / "targets.json";
  std::ofstream(targets) << R"({"schema": "moebench/targets@1", "targets": [
    {"id": "met", "issue": 4, "name": "met", "sweeps": [["router", "--experts", "8", "--topk", "2"]],
     "tokens": 4, "metric": "median_us", "max": 1e9},
    {"id": "missed", "issue": 5, "name": "missed", "tokens": 4, "metric": "pct_copy_sum", "min": 101,
     "sweeps": [["router", "--experts", "8", "--topk", "2"], ["combine", "--experts", "8", "--topk", "2", "--hidden", "64"]]},
    {"id": "peerless", "issue": 6, "name": "peerless", "sweeps": [["router", "--experts", "8", "--topk", "2"]],
     "tokens": 4, "metric": "pct_peer", "min": 70},
    {"id": "unswept", "issue": 5, "name": "unswept", "sweeps": [["dispatch"]], "tokens": 4, "metric": "median_us", "max": 5}]})";
  const fs::path out = dir / "out";
  Proc r = gpu_targets(targets, out, " met missed peerless");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 of 2 measured targets met; 2 not measured"), std::string::npos) << r.out;
  const json report = json::parse(slurp(out / "targets-report.json"));
  ASSERT_NE(target_row(report, "met"), nullptr);
  EXPECT_EQ(target_row(report, "met")->at("met"), true);
  EXPECT_GT(target_row(report, "met")->at("value").get<double>(), 0.0);
  EXPECT_NE(target_row(report, "met")->at("commands").at(0).get<std::string>().find("sweep router"), std::string::npos);
  EXPECT_EQ(target_row(report, "missed")->at("met"), false);
  EXPECT_EQ(target_row(report, "missed")->at("configs").size(), 2u);
  EXPECT_TRUE(target_row(report, "peerless")->at("met").is_null());
  EXPECT_TRUE(target_row(report, "unswept")->at("met").is_null());
  // A second run keeps what is done; the judge alone fails on a miss when asked.
  r = gpu_targets(targets, out, " met");
  EXPECT_NE(r.out.find("met/0: done before"), std::string::npos) << r.out;
  r = sh("python3 " + quote(kSource / "scripts" / "check_targets.py") + " " + quote(out) + " --targets " +
         quote(targets) + " --fail-on-miss");
  EXPECT_EQ(r.code, 1) << r.out;
  fs::remove_all(dir);
}

TEST(ScriptsTargets, PeerTargetsJudgeAgainstTheNamedPeer) {
  // Two pct_peer targets on one gmm sweep: the plain one against cuBLAS's dense GEMM, the one
  // with "peer": "grouped_mm" against torch._grouped_mm (peers.json as scripts/peers.py writes it).
  const fs::path dir = temp_dir("peer-targets");
  const fs::path targets = dir / "targets.json";
  const std::string sweep = R"([["gmm", "--experts", "8", "--topk", "2", "--hidden", "64", "--intermediate", "32"]])";
  std::ofstream(targets) << R"({"schema": "moebench/targets@1", "targets": [
    {"id": "dense", "issue": 11, "name": "dense", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "pct_peer", "min": 70},
    {"id": "grouped", "issue": 11, "name": "grouped", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "pct_peer",
     "peer": "grouped_mm", "min": 100},
    {"id": "no-grouped", "issue": 11, "name": "no grouped", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "pct_peer",
     "peer": "grouped_mm", "min": 100},
    {"id": "scaled", "issue": 19, "name": "scaled", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "pct_peer",
     "peer": "scaled_mm", "min": 100},
    {"id": "no-scaled", "issue": 19, "name": "no scaled", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "pct_peer",
     "peer": "scaled_mm", "min": 100},
    {"id": "tflops", "issue": 19, "name": "tflops", "sweeps": )" << sweep << R"(, "tokens": 4, "metric": "tflops", "min": 1e6},
    {"id": "x-same", "issue": 19, "name": "x same", "sweeps": [)" << sweep.substr(1, sweep.size() - 2) << ", "
                         << sweep.substr(1, sweep.size() - 2) << R"(], "tokens": 4, "metric": "x_sweep", "min": 0}]})";
  const fs::path out = dir / "out";
  ASSERT_EQ(gpu_targets(targets, out).code, 0);
  std::ofstream(out / "peers.json") << R"j({"schema": "moebench/peers@1", "peers": {
    "dense": {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "tflops": 1e6, "grouped_mm_tflops": 1e-9},
    "grouped": {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "tflops": 1e6, "grouped_mm_tflops": 1e-9},
    "no-grouped": {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "tflops": 1e6, "grouped_mm_error": "not built"},
    "scaled": {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "tflops": 1e6, "scaled_mm_tflops": 1e-9},
    "no-scaled": {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "tflops": 1e6, "scaled_mm_error": "no blockwise recipe"}}})j";
  const Proc r = sh("python3 " + quote(kSource / "scripts" / "check_targets.py") + " " + quote(out) + " --targets " +
                    quote(targets));
  ASSERT_EQ(r.code, 0) << r.out;
  const json report = json::parse(slurp(out / "targets-report.json"));
  EXPECT_EQ(target_row(report, "dense")->at("met"), false) << r.out;
  EXPECT_EQ(target_row(report, "grouped")->at("met"), true) << r.out;
  EXPECT_NE(r.out.find("torch._grouped_mm"), std::string::npos) << r.out;
  EXPECT_TRUE(target_row(report, "no-grouped")->at("met").is_null()) << r.out;
  EXPECT_NE(r.out.find("not built"), std::string::npos) << r.out;
  // fp8's peer (torch._scaled_mm, block-scaled), the TFLOP/s bound and the ratio of two sweeps.
  EXPECT_EQ(target_row(report, "scaled")->at("met"), true) << r.out;
  EXPECT_NE(r.out.find("torch._scaled_mm"), std::string::npos) << r.out;
  EXPECT_TRUE(target_row(report, "no-scaled")->at("met").is_null()) << r.out;
  EXPECT_NE(r.out.find("no blockwise recipe"), std::string::npos) << r.out;
  EXPECT_EQ(target_row(report, "tflops")->at("met"), false) << r.out;
  EXPECT_NE(r.out.find(">= 1000000.0 TFLOP/s"), std::string::npos) << r.out;
  EXPECT_GT(target_row(report, "x-same")->at("value").get<double>(), 0.0) << r.out;  // a factor, judged
  EXPECT_EQ(target_row(report, "x-same")->at("met"), true) << r.out;
  fs::remove_all(dir);
}

// A results@1 file of one sweep as `moebench sweep` writes it, reduced to what check_targets.py
// reads: per token count, one valid record of `us` microseconds that moved `bytes`.
void write_sweep(const fs::path& dir, const std::string& kernel, double copy_gbps,
                 const std::vector<std::tuple<int, double, double>>& at) {
  json recs = json::array();
  for (auto [tokens, us, bytes] : at)
    recs.push_back({{"kernel", kernel}, {"tokens", tokens}, {"status", "ok"}, {"validation", {{"ok", true}}},
                    {"stats", {{"median_us", us}}}, {"bytes", bytes}, {"gbps", bytes / us * 1e-3},
                    {"config_key", kernel + "-best"}});
  fs::create_directories(dir);
  std::ofstream(dir / "results.json") << json({{"schema", "moebench/results@1"},
                                               {"meta", {{"copy_bw_gbps", copy_gbps}, {"device", "test"}}},
                                               {"records", recs}}).dump();
}

TEST(ScriptsTargets, LayerAgainstItsStagesBandwidthBoundSum) {
  // The layer's time over its stages' bytes at the copy bandwidth, at every token count, the
  // worst counting: at 1000 GB/s 1e6 bytes take 1 us, so stages of 2e6 + 1e6 bytes bound the
  // layer at 3 us.
  const fs::path dir = temp_dir("layer-targets");
  const fs::path targets = dir / "targets.json";
  const std::string sweeps = R"([["layer"], ["router"], ["gmm", "--stage", "down"]])";
  std::ofstream(targets) << R"({"schema": "moebench/targets@1", "targets": [
    {"id": "fast", "issue": 23, "name": "fast", "sweeps": )" << sweeps << R"(, "tokens": [1, 8], "metric": "layer_vs_stages", "max": 1.3},
    {"id": "slow", "issue": 23, "name": "slow", "sweeps": )" << sweeps << R"(, "tokens": [1, 8], "metric": "layer_vs_stages", "max": 1.3},
    {"id": "unmeasured", "issue": 23, "name": "unmeasured", "sweeps": )" << sweeps << R"(, "tokens": [1, 8], "metric": "layer_vs_stages", "max": 1.3},
    {"id": "partly", "issue": 23, "name": "partly", "sweeps": )" << sweeps << R"(, "tokens": [1, 8], "metric": "layer_vs_stages", "max": 1.3}]})";
  const fs::path out = dir / "out";
  for (const char* id : {"fast", "slow", "unmeasured", "partly"}) {
    write_sweep(out / id / "1", "router", 1000, {{1, 9.0, 2e6}, {8, 9.0, 2e6}});
    write_sweep(out / id / "2", "gmm", 1000, {{1, 9.0, 1e6}, {8, 9.0, 1e6}});
  }
  write_sweep(out / "fast" / "0", "layer", 1000, {{1, 3.3, 0}, {8, 3.6, 0}});  // 1.1x, 1.2x
  write_sweep(out / "slow" / "0", "layer", 1000, {{1, 3.0, 0}, {8, 4.5, 0}});  // 1.0x, 1.5x: T=8 misses
  write_sweep(out / "unmeasured" / "0", "layer", 1000, {{1, 3.0, 0}});         // no T=8 record
  write_sweep(out / "partly" / "0", "layer", 1000, {{1, 4.5, 0}});             // 1.5x, no T=8 record
  const Proc r = sh("python3 " + quote(kSource / "scripts" / "check_targets.py") + " " + quote(out) + " --targets " +
                    quote(targets));
  ASSERT_EQ(r.code, 0) << r.out;
  const json report = json::parse(slurp(out / "targets-report.json"));
  const json& fast = *target_row(report, "fast");
  EXPECT_EQ(fast.at("met"), true) << r.out;
  EXPECT_NEAR(fast.at("value").get<double>(), 1.2, 1e-9) << r.out;
  EXPECT_NE(fast.at("detail").get<std::string>().find("worst at T=8"), std::string::npos) << r.out;
  EXPECT_NE(fast.at("detail").get<std::string>().find("router 2.00 + gmm down 1.00"), std::string::npos) << r.out;
  const json& slow = *target_row(report, "slow");
  EXPECT_EQ(slow.at("met"), false) << r.out;
  EXPECT_NEAR(slow.at("value").get<double>(), 1.5, 1e-9) << r.out;
  // Some token counts unmeasured: met unknown while the others meet, a miss once one misses;
  // either way the value and the counts not judged are shown.
  const json& unmeasured = *target_row(report, "unmeasured");
  EXPECT_TRUE(unmeasured.at("met").is_null()) << r.out;
  EXPECT_NEAR(unmeasured.at("value").get<double>(), 1.0, 1e-9) << r.out;
  EXPECT_NE(unmeasured.at("detail").get<std::string>().find("not judged at 1 of 2 token counts (T=8"), std::string::npos)
      << r.out;
  const json& partly = *target_row(report, "partly");
  EXPECT_EQ(partly.at("met"), false) << r.out;
  EXPECT_NEAR(partly.at("value").get<double>(), 1.5, 1e-9) << r.out;
  EXPECT_NE(r.out.find("1.20x"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(ScriptsTargets, EveryShippedTargetIsAProblemTheCliAccepts) {
  // scripts/targets.json names sweeps by CLI flags: each must still parse as a problem
  // (lookup parses it and resolves a config without running anything).
  const json spec = json::parse(slurp(kSource / "scripts" / "targets.json"));
  ASSERT_EQ(spec.at("schema"), "moebench/targets@1");
  int n = 0;
  for (const json& t : spec.at("targets"))
    for (const json& s : t.at("sweeps")) {
      // A sweep that names its backend (an engine's) is planned by the sweep itself, which
      // takes its sweep-only flags (--budget) too; the others are looked up.
      const bool engine = std::find(s.begin(), s.end(), json("--backend")) != s.end();
      std::string cmd = std::string(MOEBENCH_EXE) + (engine ? " sweep" : " lookup");
      for (const json& a : s) cmd += " " + a.get<std::string>();
      // A target over several token counts: its first stands for all (the sweep is the same).
      const json& tok = t.at("tokens");
      cmd += " --tokens " + std::to_string((tok.is_array() ? tok.at(0) : tok).get<int>()) +
             (engine ? " --dry-run" : " --backend cpu --tables none");
      const Proc r = sh(cmd);
      EXPECT_EQ(r.code, 0) << t.at("id") << ": " << cmd << "\n" << r.out;
      ++n;
    }
  EXPECT_GE(n, 20);
}

// The Slurm recipe as a job array runs it: two shards started fresh (no journal yet), merged,
// then one shard requeued, which continues its journal and measures nothing twice.
TEST(ScriptsCluster, SlurmRecipeRunsFreshMergesAndResumesARequeuedShard) {
  const fs::path dir = temp_dir("slurm");
  const std::string recipe = quote(kSource / "scripts" / "cluster" / "slurm-sweep.sh");
  auto task = [&](int i) {
    return sh("cd " + quote(dir) + " && SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_ID=" + std::to_string(i) +
              " MOEBENCH=" + quote(MOEBENCH_EXE) + " MOEBENCH_FAMILY=router bash " + recipe +
              " qwen3-30b-a3b --backend cpu --tokens 1,2,4,8 --tables none");
  };
  for (int i = 0; i < 2; ++i) {
    const Proc r = task(i);
    ASSERT_EQ(r.code, 0) << "shard " << i << " on its first run:\n" << r.out;
    EXPECT_TRUE(fs::exists(dir / "results" / "qwen3-30b-a3b" / ("shard-" + std::to_string(i) + "-of-2") / "journal.jsonl"));
  }
  const fs::path shards = dir / "results" / "qwen3-30b-a3b";
  const Proc m = sh(std::string(MOEBENCH_EXE) + " merge " + quote(shards / "shard-0-of-2") + " " +
                    quote(shards / "shard-1-of-2") + " --out " + quote(dir / "merged") + " --tables " +
                    quote(dir / "tables"));
  ASSERT_EQ(m.code, 0) << m.out;
  const std::string merged = slurp(dir / "merged" / "results.json");
  for (const char* t : {"\"tokens\": 1", "\"tokens\": 2", "\"tokens\": 4", "\"tokens\": 8"})
    EXPECT_NE(merged.find(t), std::string::npos) << t << " missing from the merged results";

  const fs::path journal = shards / "shard-0-of-2" / "journal.jsonl";
  const std::size_t before = slurp(journal).size();
  const Proc again = task(0);  // requeued: the journal exists, so the recipe resumes it
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("resumed"), std::string::npos) << again.out;
  const std::string after = slurp(journal);
  EXPECT_EQ(after.substr(before).find("\"cand_index\""), std::string::npos)
      << "a resumed shard re-measured a candidate:\n" << after.substr(before);
  fs::remove_all(dir);
}

// ---- scripts/gpu-check.sh: the first-run checks of docs/gpu-session.md in one command

TEST(ScriptsGpuCheck, RefusesWhereNoGpuIsVisibleAndKeepsWhatItSaw) {
  if (moe::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible: the script would run the whole GPU check";
  const fs::path out = temp_dir("gpu-check");
  const auto r = sh("MOEBENCH_BIN=" + quote(MOEBENCH_EXE) + " bash " + quote(kSource / "scripts" / "gpu-check.sh") + " " +
                    quote(out / "run"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("gpu-check: no GPU visible"), std::string::npos) << r.out;
  // The log and the device listing stay for the reader, nothing else ran.
  EXPECT_NE(slurp(out / "run" / "log.txt").find("0 device(s) visible"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "run" / "devices.txt"));
  EXPECT_FALSE(fs::exists(out / "run" / "sweep"));
  const auto usage = sh("bash " + quote(kSource / "scripts" / "gpu-check.sh"));
  EXPECT_EQ(usage.code, 2) << usage.out;
  EXPECT_NE(usage.out.find("usage:"), std::string::npos) << usage.out;
  fs::remove_all(out);
}
