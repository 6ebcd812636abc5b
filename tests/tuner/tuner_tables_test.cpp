#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/temp_dirs.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/tables.hpp"
#include "tuner/store/tables_dir.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir(name); }

std::vector<double> around(double m, double spread, int n = 40) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(m * (1 + spread * ((i % 9) - 4) / 4.0));
  return v;
}

// A journal of one problem: per token count, the default (tile 16) and two others with the
// given medians; the point line names winner and runner-up as a search would.
JournalContents journal(const std::map<int, std::array<double, 3>>& medians) {
  JournalContents j;
  j.header = {{"type", "header"}, {"schema", kJournalSchema}, {"device", "cpu: test"}, {"backend", "cpu"},
              {"settings", {{"rule", {{"max_noise", 0.01}}}}}};
  int pi = 0;
  for (auto& [tokens, m] : medians) {
    const std::string point = "scale/tokens=" + std::to_string(tokens);
    j.lines.push_back({{"type", "prep"}, {"point", point}, {"bytes", 1e6}, {"flops", 1e6}});
    const int tiles[3] = {16, 4, 64};
    std::vector<std::pair<double, std::string>> ranked;
    for (int c = 0; c < 3; ++c) {
      const std::string key = "tile=" + std::to_string(tiles[c]);
      j.lines.push_back({{"type", "eval"}, {"point", point}, {"point_index", pi}, {"kernel", "scale"},
                         {"problem", {{"width", 64}, {"tokens", tokens}}}, {"problem_key", "width=64"},
                         {"tokens", tokens}, {"cand_index", c}, {"config", {{"tile", tiles[c]}}}, {"config_key", key},
                         {"is_default", c == 0}, {"round", 0}, {"status", "ok"}, {"validation", {{"ok", true}}},
                         {"samples_us", around(m[c], 0.002)}, {"timer", "steady_clock"}});
      ranked.emplace_back(m[c], key);
    }
    std::sort(ranked.begin(), ranked.end());
    j.lines.push_back({{"type", "point"}, {"point", point}, {"point_index", pi}, {"kernel", "scale"},
                       {"problem_key", "width=64"}, {"tokens", tokens}, {"evaluated", 3}, {"total", 3},
                       {"winner", ranked[0].second}, {"runner_up", ranked[1].second}, {"default", "tile=16"}});
    ++pi;
  }
  return j;
}

json meta() { return {{"device", "cpu: test"}, {"device_slug", "cpu"}, {"backend", "cpu"}, {"copy_bw_gbps", 10.0}}; }

}  // namespace

TEST(TunerTables, ResultsChooseWinnerOrKeepTheDefault) {
  // tokens 1: tile 4 is 30% faster than the default; tokens 8: tile 64 is 0.5% faster (noise).
  const json r = build_results(journal({{1, {100, 70, 130}}, {8, {100, 130, 99.5}}}), meta());
  ASSERT_EQ(r["points"].size(), 2u);
  const json& p1 = r["points"][0];
  EXPECT_EQ(p1["chosen"]["config_key"], "tile=4");
  EXPECT_FALSE(p1["kept_default"].get<bool>());
  EXPECT_EQ(p1["runner_up"]["config_key"], "tile=16");
  EXPECT_NEAR(p1["speedup_vs_default"].get<double>(), 100.0 / 70, 1e-2);
  const double median = p1["chosen"]["median_us"].get<double>();
  EXPECT_NEAR(median, 70, 0.5);
  EXPECT_NEAR(p1["gbps"].get<double>(), 1e6 / (median * 1e-6) / 1e9, 1e-6);
  const json& p8 = r["points"][1];
  EXPECT_EQ(p8["winner"]["config_key"], "tile=64");
  EXPECT_EQ(p8["chosen"]["config_key"], "tile=16");  // within noise: no churn
  EXPECT_TRUE(p8["kept_default"].get<bool>());
  EXPECT_EQ(p8["runner_up"]["config_key"], "tile=64");  // the measured winner is kept
  EXPECT_DOUBLE_EQ(p8["speedup_vs_default"].get<double>(), 1.0);
  const std::string md = markdown_summary(r);
  EXPECT_NE(md.find("default kept"), std::string::npos) << md;
  EXPECT_NE(md.find("6 of 6 candidates timed over 2 points"), std::string::npos) << md;
  EXPECT_NE(md.find("1.43x"), std::string::npos) << md;
}

// On the cpu a problem in cache outruns the host's memory copy (dispatch read 480%): no % of
// peak there, and the summary says why. On cuda it is kept, and a figure above 100% is marked
// as served from cache, never shown as a fraction of the peak.
TEST(TunerTables, PercentOfPeakOnlyAgainstARealPeak) {
  // 1e6 bytes in ~70 us: 14 GB/s, 143% of the 10 GB/s copy.
  const json cpu = build_results(journal({{1, {100, 70, 130}}}), meta());
  for (auto& r : cpu["records"]) EXPECT_FALSE(r.contains("pct_peak")) << r.dump();
  EXPECT_FALSE(cpu["points"][0].contains("pct_peak"));
  std::string md = markdown_summary(cpu);
  EXPECT_NE(md.find("no % of peak on the cpu backend"), std::string::npos) << md;
  EXPECT_EQ(md.find("143."), std::string::npos) << md;
  EXPECT_EQ(md.find("| % of peak |"), std::string::npos) << "no column that is always empty\n" << md;
  EXPECT_EQ(results_csv(cpu).find(",143."), std::string::npos);

  JournalContents j = journal({{1, {100, 70, 130}}, {8, {1000, 700, 1300}}});
  j.header["backend"] = "cuda";
  json m = meta();
  m["backend"] = "cuda";
  const json gpu = build_results(j, m);
  const double pct = gpu["points"][0]["pct_peak"].get<double>();
  EXPECT_NEAR(pct, 100 * (1e6 / (gpu["points"][0]["chosen"]["median_us"].get<double>() * 1e-6) / 1e9) / 10.0, 1e-6);
  EXPECT_GT(pct, 100);
  EXPECT_LT(gpu["points"][1]["pct_peak"].get<double>(), 100);
  md = markdown_summary(gpu);
  EXPECT_NE(md.find("| % of peak |"), std::string::npos) << md;
  EXPECT_NE(md.find(fmt::format("{:.1f} (cache)", pct)), std::string::npos) << md;
  EXPECT_NE(md.find("(cache): faster than the measured copy bandwidth"), std::string::npos) << md;
  EXPECT_EQ(md.find(fmt::format("{:.1f} (cache)", gpu["points"][1]["pct_peak"].get<double>())), std::string::npos) << md;
}

// "timed" counts the candidates that ran correctly and were timed, not every one tried.
TEST(TunerTables, TimedCountsOnlyCandidatesThatWereTimed) {
  JournalContents j = journal({{1, {100, 70, 130}}});
  for (auto& l : j.lines)
    if (l.value("type", "") == "eval" && l.value("config_key", "") == "tile=64") {
      l["status"] = "invalid";
      l["validation"] = {{"ok", false}};
      l["samples_us"] = json::array();
    }
  const json r = build_results(j, meta());
  const json& p = r["points"][0];
  EXPECT_EQ(p["evaluated"], 3);
  EXPECT_EQ(p["timed"], 2);
  EXPECT_EQ(p["not_usable"], 1);
  const std::string md = markdown_summary(r);
  EXPECT_NE(md.find("2 of 3 candidates timed over 1 points"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2/3 | 1 |"), std::string::npos) << md;
}

// The layer's resolved config runs to ~300 characters: a terminal gets it abbreviated, the files
// whole.
TEST(TunerTables, SummaryAbbreviatesLongConfigsOnlyWhenAskedTo) {
  JournalContents j = journal({{1, {100, 70, 130}}});
  const std::string long_key = "tile=4,block_m=64,tokens_per_task=16,note=" + std::string(200, 'x');
  for (auto& l : j.lines) {
    if (l.value("config_key", "") == "tile=4") l["config_key"] = long_key;
    if (l.value("winner", "") == "tile=4") l["winner"] = long_key;
  }
  const json r = build_results(j, meta());
  ASSERT_EQ(r["points"][0]["chosen"]["config_key"], long_key);
  const std::string whole = markdown_summary(r);
  EXPECT_NE(whole.find(long_key), std::string::npos) << whole;
  EXPECT_EQ(whole.find("abbreviated here"), std::string::npos) << whole;
  const std::string cut = markdown_summary(r, 40);
  EXPECT_EQ(cut.find(long_key), std::string::npos) << cut;
  const std::string abbreviated = "t=4,bm=64,tpt=16,n=" + std::string(200, 'x');
  EXPECT_NE(cut.find("| " + abbreviated.substr(0, 37) + "... |"), std::string::npos) << cut;
  EXPECT_NE(cut.find("Configs longer than 40 characters are abbreviated here"), std::string::npos) << cut;
  EXPECT_NE(cut.find("summary.md and results.json hold them whole"), std::string::npos) << cut;
  // Short enough once abbreviated: not cut.
  const std::string fits = markdown_summary(r, 300);
  EXPECT_NE(fits.find(long_key), std::string::npos);
  const std::string names = markdown_summary(r, 230);
  EXPECT_NE(names.find("| " + abbreviated + " |"), std::string::npos) << names;

  // The layer's row: each stage's config as it ran, its names abbreviated, the stage names kept.
  for (auto& l : j.lines)
    if (l.value("config_key", "") == long_key) {
      l["config"] = {{"router", "auto"}, {"gmm_up", "auto"}};
      l["resolved_config"] = {{"router", "rows_per_task=64;select=heap"}, {"gmm_up", "block_m=64;block_n=128"}};
    }
  const json layer = build_results(j, meta());
  const std::string stages = "auto: gmm_up=block_m=64;block_n=128,router=rows_per_task=64;select=heap";
  EXPECT_NE(markdown_summary(layer).find("| " + stages + " |"), std::string::npos) << markdown_summary(layer);
  EXPECT_NE(markdown_summary(layer, 60).find("| auto: gmm_up=bm=64;bn=128,router=rpt=64;s=heap |"), std::string::npos)
      << markdown_summary(layer, 60);
}

// The layer's baseline asks every stage for its family default: when it is the choice (it won,
// or was kept within noise), its row says "default", not "auto", which names the tables' choice.
TEST(TunerTables, SummaryLabelsTheLayersAllDefaultChoiceDefault) {
  JournalContents j = journal({{1, {70, 100, 130}}});  // the default (tile 16) wins
  for (auto& l : j.lines) {
    if (l.value("type", "") != "eval") continue;
    const bool is_default = l.value("is_default", false);
    l["config"] = {{"router", is_default ? "default" : "auto"}, {"gmm_up", is_default ? "default" : "auto"}, {"pdl", 1}};
    l["resolved_config"] = {{"router", "rows_per_task=4;select=heap"}, {"gmm_up", "block_m=16;block_n=64"}};
  }
  const json r = build_results(j, meta());
  ASSERT_EQ(r["points"][0]["chosen"]["config_key"], "tile=16");
  const std::string md = markdown_summary(r);
  EXPECT_NE(md.find("| default: gmm_up=block_m=16;block_n=64,router=rows_per_task=4;select=heap |"), std::string::npos) << md;
  EXPECT_EQ(md.find("auto:"), std::string::npos) << md;
  // A layer config of explicit stage texts is neither.
  for (auto& l : j.lines)
    if (l.value("type", "") == "eval") l["config"] = {{"router", "rows_per_task=4;select=heap"}, {"gmm_up", "block_m=16;block_n=64"}};
  const std::string explicit_md = markdown_summary(build_results(j, meta()));
  EXPECT_NE(explicit_md.find("| gmm_up=block_m=16;block_n=64,router=rows_per_task=4;select=heap |"), std::string::npos) << explicit_md;
}

TEST(TunerTables, WrittenAtomicallyWithRunnerUpAndKeepingOtherEntries) {
  const fs::path d = temp_dir("tables");
  auto paths = write_tables(build_results(journal({{1, {100, 70, 130}}, {8, {100, 130, 99.5}}}), meta()), d.string());
  ASSERT_EQ(paths.size(), 1u);
  const std::string path = moe::runtime::table_path(d.string(), "cpu", "scale", "width=64");
  EXPECT_EQ(paths[0], path);
  auto t = moe::runtime::load_table(path);
  ASSERT_EQ(t.entries.size(), 2u);
  EXPECT_EQ(t.entries.at(1).config.i("tile"), 4);
  EXPECT_TRUE(t.entries.at(1).has_runner_up);
  EXPECT_EQ(t.entries.at(1).runner_up.i("tile"), 16);
  EXPECT_TRUE(t.entries.at(8).kept_default);
  EXPECT_EQ(t.entries.at(8).config.i("tile"), 16);

  // Readers holding the old file keep reading a whole old file: the new one replaces it by rename.
  std::ifstream old_reader(path);
  // A second sweep of other token counts (and 8 again) merges into the table.
  write_tables(build_results(journal({{8, {100, 50, 120}}, {64, {10, 12, 9}}}), meta()), d.string());
  const std::string old_text((std::istreambuf_iterator<char>(old_reader)), std::istreambuf_iterator<char>());
  EXPECT_NE(old_text.find("\"kept_default\": true"), std::string::npos);
  t = moe::runtime::load_table(path);
  ASSERT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.entries.at(1).config.i("tile"), 4);  // kept from the first sweep
  EXPECT_EQ(t.entries.at(8).config.i("tile"), 4);  // replaced
  EXPECT_EQ(t.entries.at(64).config.i("tile"), 64);
  for (auto& e : fs::recursive_directory_iterator(d))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  // Entries are in numeric token order, with the schema and provenance.
  std::ifstream in(path);
  const json j = json::parse(in);
  EXPECT_EQ(j["schema"], moe::runtime::kTableSchema);
  EXPECT_TRUE(j.contains("provenance"));
  std::vector<std::string> keys;
  for (auto& [k, v] : j["entries"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"1", "64", "8"}));  // nlohmann sorts on read; the file order is checked below
  std::ifstream raw(path);
  const std::string text((std::istreambuf_iterator<char>(raw)), std::istreambuf_iterator<char>());
  EXPECT_LT(text.find("\"8\""), text.find("\"64\""));
  fs::remove_all(d);
}

TEST(TunerTables, ResultsRoundTripAndCsv) {
  const fs::path d = temp_dir("results-rt");
  const json r = build_results(journal({{1, {100, 70, 130}}}), meta());
  write_results((d / "results.json").string(), r);
  EXPECT_EQ(read_results(d.string()), r);
  const std::string csv = results_csv(r);
  EXPECT_EQ(csv.rfind("kernel,backend,problem,tokens,config,", 0), 0u);
  EXPECT_NE(csv.find("scale,cpu,width=64,1,tile=4,0,ok,40,"), std::string::npos) << csv;
  std::ofstream(d / "bad.json") << R"({"schema": "something/else"})";
  EXPECT_THROW(read_results((d / "bad.json").string()), moe::Error);
  fs::remove_all(d);
}

// Processes writing one table at once (the shards of a job array): every entry survives.
TEST(TunerTables, ConcurrentWritersLoseNoEntry) {
  const fs::path d = temp_dir("tables-concurrent");
  constexpr int kProcs = 4, kEach = 12;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i)
        write_tables(build_results(journal({{1 + p * kEach + i, {100, 70, 130}}}), meta()), d.string());
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ::waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  const auto t = moe::runtime::load_table(moe::runtime::table_path(d.string(), "cpu", "scale", "width=64"));
  EXPECT_EQ(t.entries.size(), static_cast<std::size_t>(kProcs * kEach));
  fs::remove_all(d);
}

// A --tables that cannot be written is refused before any measuring, with what to do.
TEST(TunerTables, TablesDirIsCheckedBeforeSweeping) {
  const fs::path d = temp_dir("tables-dir-check");
  auto refusal = [](const std::string& dir) {
    try {
      check_tables_dir(dir, "--tables");
    } catch (const moe::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Missing folders are made; nothing is left behind by the probe.
  const fs::path fresh = d / "a" / "b";
  EXPECT_EQ(refusal(fresh.string()), "");
  EXPECT_TRUE(fs::is_directory(fresh));
  EXPECT_TRUE(fs::is_empty(fresh));
  // A file in the way, or under the path.
  std::ofstream(d / "file") << "x";
  const std::string on_file = refusal((d / "file").string());
  EXPECT_NE(on_file.find("not a directory"), std::string::npos) << on_file;
  EXPECT_NE(on_file.find("--tables none"), std::string::npos) << on_file;
  const std::string under_file = refusal((d / "file" / "sub").string());
  EXPECT_NE(under_file.find("cannot create it"), std::string::npos) << under_file;
  // Read-only: /proc refuses even root.
  const std::string ro = refusal("/proc/moebench-tables");
  EXPECT_NE(ro.find("--tables /proc/moebench-tables"), std::string::npos) << ro;
  // The default follows $MOEBENCH_CONFIG_DIR's first folder, else ./configs.
  const char* env = std::getenv("MOEBENCH_CONFIG_DIR");
  const std::string saved = env ? env : "";
  ::setenv("MOEBENCH_CONFIG_DIR", "/x/first:/x/second", 1);
  EXPECT_EQ(default_tables_dir(), "/x/first");
  ::unsetenv("MOEBENCH_CONFIG_DIR");
  EXPECT_EQ(default_tables_dir(), "configs");
  if (env) ::setenv("MOEBENCH_CONFIG_DIR", saved.c_str(), 1);
  fs::remove_all(d);
}

TEST(TunerTables, ARestartedRecordKeepsOnlyItsOwnTimersSamples) {
  // Tokens 1: the default's round 0 was event-timed (~100 us), its round 1 restarted on CUPTI
  // (~60 us). The record's statistic is the CUPTI samples alone, and its timer says so.
  JournalContents j = journal({{1, {100, 70, 130}}});
  json again = j.lines[1];  // the default's eval line
  ASSERT_EQ(again.value("config_key", ""), "tile=16");
  j.lines[1]["timer"] = "events";
  again["round"] = 1;
  again["timer"] = "cupti";
  again["restarted"] = true;
  again["samples_us"] = around(60, 0.002);
  j.lines.insert(j.lines.begin() + 4, again);
  const json r = build_results(j, meta());
  for (const json& rec : r["records"]) {
    if (rec.value("config_key", "") != "tile=16") continue;
    EXPECT_EQ(rec.value("timer", ""), "cupti");
    EXPECT_NEAR(rec["stats"]["median_us"].get<double>(), 60, 0.5);
    EXPECT_EQ(rec["stats"]["n"].get<int>(), static_cast<int>(around(60, 0.002).size()));
  }
  // The point's others are steady_clock-timed: the default (now CUPTI) is not compared with them.
  EXPECT_FALSE(r["points"][0].value("kept_default", true));
  EXPECT_FALSE(r["points"][0].contains("speedup_vs_default"));
}
