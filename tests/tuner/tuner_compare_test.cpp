#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tuner/store/compare.hpp"
#include "tuner/store/results.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

struct Rec {
  std::string config;
  double median, q1, q3;
  std::string status = "ok";
};

json results(const std::vector<Rec>& recs) {
  json r = json::array();
  for (auto& x : recs) {
    Stats s;
    s.n = 50;
    s.median_us = x.median;
    s.q1_us = x.q1;
    s.q3_us = x.q3;
    s.min_us = x.q1 * 0.9;
    s.max_us = x.q3 * 1.1;
    s.mean_us = x.median;
    if (x.status != "ok") s = Stats{};
    r.push_back({{"kernel", "router"}, {"problem_key", "experts=128,topk=8"}, {"tokens", 16}, {"config_key", x.config},
                 {"status", x.status}, {"stats", to_json(s)}});
  }
  return {{"schema", kResultsSchema}, {"meta", json::object()}, {"records", r}, {"points", json::array()}};
}

std::vector<Rec> base_recs() { return {{"tile=1", 100, 99, 101}, {"tile=2", 50, 49.5, 50.5}, {"tile=4", 200, 198, 202}}; }

std::vector<Rec> scaled(double f) {
  auto r = base_recs();
  for (auto& x : r) x.median *= f, x.q1 *= f, x.q3 *= f;
  return r;
}

fs::path write(const fs::path& dir, const std::string& name, const json& j) {
  const fs::path p = dir / name;
  write_results(p.string(), j);
  return p;
}

int run_exe(const std::string& args, std::string* out = nullptr) {
  const std::string log = (fs::temp_directory_path() / ("moebench-cmp-" + std::to_string(::getpid()) + ".log")).string();
  const int st = std::system((std::string(MOEBENCH_EXE) + " " + args + " > " + log + " 2>&1").c_str());
  if (out) {
    std::ifstream in(log);
    *out = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  fs::remove(log);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST(TunerCompare, Verdicts) {
  const Stats base = summarize({98, 99, 100, 101, 102});
  EXPECT_EQ(verdict(base, base, 0.05), Verdict::same);
  EXPECT_EQ(verdict(base, summarize({118, 119, 120, 121, 122}), 0.05), Verdict::slow);
  EXPECT_EQ(verdict(base, summarize({78, 79, 80, 81, 82}), 0.05), Verdict::fast);
  EXPECT_EQ(verdict(base, summarize({103, 103.5, 104, 104.5, 105}), 0.05), Verdict::same);  // apart, but under the threshold
  // 15% slower, but the spread of both runs covers the difference.
  EXPECT_EQ(verdict(summarize({70, 90, 100, 120, 140}), summarize({80, 100, 115, 130, 150}), 0.05), Verdict::noisy);
}

TEST(TunerCompare, IdenticalIsSameAndExitsZero) {
  const auto rep = compare_results(results(base_recs()), results(base_recs()), 0.05);
  ASSERT_EQ(rep.rows.size(), 3u);
  EXPECT_EQ(rep.count(Verdict::same), 3);
  EXPECT_DOUBLE_EQ(rep.geomean, 1.0);
  const std::string md = compare_markdown(rep, 0.05);
  EXPECT_NE(md.find("| SAME |"), std::string::npos) << md;
  EXPECT_NE(md.find("3 matched: 3 SAME"), std::string::npos) << md;

  const fs::path d = fs::temp_directory_path() / ("moebench-cmp-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const auto a = write(d, "a.json", results(base_recs())), b = write(d, "b.json", results(base_recs()));
  EXPECT_EQ(run_exe("compare " + a.string() + " " + b.string() + " --fail-on slow"), 0);
  fs::remove_all(d);
}

TEST(TunerCompare, TwentyPercentSlowerIsSlowAndFailsWhenAsked) {
  const auto rep = compare_results(results(base_recs()), results(scaled(1.2)), 0.05);
  EXPECT_EQ(rep.count(Verdict::slow), 3);
  EXPECT_NEAR(rep.geomean, 1.2, 1e-9);
  const auto faster = compare_results(results(base_recs()), results(scaled(0.8)), 0.05);
  EXPECT_EQ(faster.count(Verdict::fast), 3);

  const fs::path d = fs::temp_directory_path() / ("moebench-cmp2-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const auto a = write(d, "a.json", results(base_recs())), b = write(d, "b.json", results(scaled(1.2)));
  std::string out;
  EXPECT_EQ(run_exe("compare " + a.string() + " " + b.string() + " --fail-on slow", &out), 1);
  EXPECT_NE(out.find("SLOW"), std::string::npos) << out;
  EXPECT_NE(out.find("+20.0%"), std::string::npos) << out;
  EXPECT_EQ(run_exe("compare " + a.string() + " " + b.string()), 0);  // reports, does not fail
  // A threshold above the change: SAME.
  EXPECT_EQ(run_exe("compare " + a.string() + " " + b.string() + " --threshold 25% --fail-on slow"), 0);
  // Missing file: a clear error, exit 2.
  EXPECT_EQ(run_exe("compare " + a.string() + " " + (d / "nope.json").string(), &out), 2);
  EXPECT_NE(out.find("cannot read results"), std::string::npos) << out;
  fs::remove_all(d);
}

TEST(TunerCompare, OverlappingNoisyIsNoisy) {
  const std::vector<Rec> base = {{"tile=1", 100, 70, 140}};
  const std::vector<Rec> now = {{"tile=1", 115, 85, 150}};
  const auto rep = compare_results(results(base), results(now), 0.05);
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_EQ(rep.rows[0].v, Verdict::noisy);
  EXPECT_EQ(rep.count(Verdict::slow), 0);
}

TEST(TunerCompare, BrokenAndUnmatchedRecords) {
  auto now = base_recs();
  now[1].status = "crashed";
  now.push_back({"tile=8", 10, 9, 11});
  auto base = base_recs();
  base.push_back({"tile=16", 10, 9, 11});
  const auto rep = compare_results(results(base), results(now), 0.05);
  EXPECT_EQ(rep.count(Verdict::broken), 1);
  EXPECT_EQ(rep.count(Verdict::same), 2);
  EXPECT_EQ(rep.only_base, 1);
  EXPECT_EQ(rep.only_new, 1);
  EXPECT_NE(compare_markdown(rep, 0.05).find("BROKEN"), std::string::npos);
}

TEST(TunerCompare, JournalOrForeignFileIsNamedNotAJsonLibraryError) {
  const fs::path d = fs::temp_directory_path() / ("moebench-cmp3-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const auto a = write(d, "a.json", results(base_recs()));
  std::ofstream(d / "journal.jsonl") << "{\"schema\":\"moebench/journal@1\",\"shard\":{}}\n{\"kernel\":\"router\"}\n";
  std::ofstream(d / "notes.txt") << "median 12.5 us\n";
  std::string out;
  EXPECT_EQ(run_exe("compare " + a.string() + " " + (d / "journal.jsonl").string(), &out), 2);
  EXPECT_NE(out.find("is a sweep journal"), std::string::npos) << out;
  EXPECT_NE(out.find("results.json beside it"), std::string::npos) << out;
  EXPECT_EQ(out.find("json.exception"), std::string::npos) << out;
  EXPECT_EQ(run_exe("compare " + (d / "notes.txt").string() + " " + a.string(), &out), 2);
  EXPECT_NE(out.find("is not a moebench/results@1 results file"), std::string::npos) << out;
  EXPECT_EQ(out.find("json.exception"), std::string::npos) << out;
  fs::remove_all(d);
}

TEST(TunerCompare, NothingMatchedIsAnErrorNotAGeomeanOfOne) {
  const fs::path d = fs::temp_directory_path() / ("moebench-cmp4-" + std::to_string(::getpid()));
  fs::create_directories(d);
  auto other = base_recs();
  for (auto& r : other) r.config += "-other";
  const auto a = write(d, "a.json", results(base_recs())), b = write(d, "b.json", results(other));
  std::string out;
  EXPECT_EQ(run_exe("compare " + a.string() + " " + b.string(), &out), 2);
  EXPECT_NE(out.find("moebench: error: no record of BASE matches one of NEW (3 only in BASE, 3 only in NEW)"),
            std::string::npos) << out;
  EXPECT_EQ(out.find("1.000"), std::string::npos) << out;
  fs::remove_all(d);
}

TEST(TunerCompare, DifferentSettingsAreNotedAndTheProblemKeyIsListedOnce) {
  json base = results(base_recs()), now = results(base_recs());
  base["meta"] = {{"device", "cpu: AMD EPYC"}, {"threads", 1}, {"timer", {{"mode", "steady_clock"}, {"used", "steady_clock"}}}};
  now["meta"] = {{"device", "cpu: AMD EPYC"}, {"threads", 8}, {"timer", {{"mode", "cold"}, {"used", "cupti"}}}};
  const auto rep = compare_results(base, now, 0.05);
  ASSERT_EQ(rep.setting_differences.size(), 2u);
  const std::string md = compare_markdown(rep, 0.05);
  EXPECT_NE(md.find("threads: 1 vs 8"), std::string::npos) << md;
  EXPECT_NE(md.find("timer: steady_clock vs cupti"), std::string::npos) << md;
  EXPECT_EQ(md.find("device:"), std::string::npos) << md;  // the same device is not a difference
  // Three rows of one problem: its key is written once, the rows say p1.
  std::size_t at = 0;
  int keys = 0;
  while ((at = md.find("experts=128,topk=8", at)) != std::string::npos) ++keys, ++at;
  EXPECT_EQ(keys, 1) << md;
  EXPECT_NE(md.find("| router | p1 | 16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- p1: experts=128,topk=8"), std::string::npos) << md;
}
