#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "support/temp_dirs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/lookup.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/merge.hpp"
#include "tuner/store/results.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/worker.hpp"
#include "tuner_scale_family.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir(name); }

std::map<std::string, const json*> records_by_config(const json& results) {
  std::map<std::string, const json*> m;
  for (auto& r : results["records"]) m[r["config_key"].get<std::string>()] = &r;
  return m;
}

void expect_unique_records(const json& results) {
  std::set<std::string> seen;
  for (auto& r : results["records"]) {
    const std::string k = r.value("problem_key", "") + "|" + std::to_string(r.value("tokens", 0)) + "|" + r.value("config_key", "");
    EXPECT_TRUE(seen.insert(k).second) << "repeated result record " << k;
  }
}

std::size_t journal_evals(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find("\"type\":\"eval\"") != std::string::npos;
  return n;
}

bool wait_for_evals(const fs::path& journal, std::size_t n, double timeout_s) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    if (fs::exists(journal) && journal_evals(journal) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace

TEST(TunerRunner, SweepWritesResultsJournalTablesAndLookupReadsThem) {
  const fs::path d = temp_dir("runner-basic");
  const SweepOutcome out = run_sweep(options(d, scale_problem(512), {1, 32}));
  EXPECT_FALSE(out.interrupted);
  EXPECT_EQ(out.points, 2);
  EXPECT_EQ(out.points_done, 2);
  EXPECT_EQ(out.candidates, 8);
  EXPECT_EQ(out.timed, 8);
  for (auto* f : {"journal.jsonl", "results.json", "results.csv", "summary.md"}) EXPECT_TRUE(fs::exists(d / f)) << f;
  const json res = read_results(d.string());
  EXPECT_EQ(res["meta"]["backend"], "cpu");
  EXPECT_GT(res["meta"]["copy_bw_gbps"].get<double>(), 0);
  EXPECT_EQ(res["meta"]["timer"]["used"], "steady_clock");
  ASSERT_EQ(res["records"].size(), 8u);
  expect_unique_records(res);
  for (auto& r : res["records"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r["validation"]["ok"].get<bool>());
    EXPECT_GE(r["stats"]["n"].get<int>(), 5);
    EXPECT_GT(r["stats"]["median_us"].get<double>(), 0);
    EXPECT_LE(r["stats"]["q1_us"].get<double>(), r["stats"]["median_us"].get<double>());
    EXPECT_GT(r["gbps"].get<double>(), 0);
    EXPECT_FALSE(r.contains("pct_peak")) << "a cpu's memory copy is no peak";
  }
  ASSERT_EQ(res["points"].size(), 2u);
  for (auto& p : res["points"]) {
    EXPECT_EQ(p["evaluated"], 4);
    EXPECT_EQ(p["total"], 4);
    EXPECT_TRUE(p.contains("chosen"));
    EXPECT_TRUE(p.contains("runner_up"));
    EXPECT_GT(p["speedup_vs_default"].get<double>(), 0);
  }
  EXPECT_NE(out.summary_md.find("8 of 8 candidates timed"), std::string::npos) << out.summary_md;
  EXPECT_NE(out.summary_md.find("| 32 |"), std::string::npos) << out.summary_md;
  // The table, and runtime lookup answering from it.
  ASSERT_EQ(out.tables.size(), 1u);
  const moe::Params problem = scale_problem(512);
  const std::string path = moe::runtime::table_path((d / "tables").string(), "cpu", "scale", moe::runtime::problem_key(problem));
  EXPECT_EQ(out.tables[0], path);
  const auto table = moe::runtime::load_table(path);
  ASSERT_EQ(table.entries.size(), 2u);
  EXPECT_TRUE(table.entries.at(1).has_runner_up);
  moe::Params q = problem;
  q.set("tokens", std::int64_t{32});
  auto c = moe::runtime::choose_config(moe::testing::scale_family(), moe::Backend::cpu, q, moe::cpu_device_info(1),
                                       {(d / "tables").string()}, true);
  EXPECT_EQ(c.how, moe::runtime::Match::exact);
  EXPECT_EQ(c.config, table.entries.at(32).config);
  q.set("tokens", std::int64_t{4});  // 4/1 = 4, 32/4 = 8: nearer to 1
  c = moe::runtime::choose_config(moe::testing::scale_family(), moe::Backend::cpu, q, moe::cpu_device_info(1),
                                  {(d / "tables").string()}, true);
  EXPECT_EQ(c.how, moe::runtime::Match::nearest);
  EXPECT_EQ(c.key, 1);
  const JournalContents j = read_journal((d / "journal.jsonl").string());
  expect_unique_lines(j);
  EXPECT_EQ(count_type(j, "point"), 2);
  EXPECT_EQ(count_type(j, "prep"), 2);
  fs::remove_all(d);
}

TEST(TunerRunner, IsolatesCrashesHangsAndWrongOutput) {
  const fs::path d = temp_dir("runner-isolation");
  SweepOptions o = options(d, scale_problem(4096, 1), {8});
  const auto t0 = std::chrono::steady_clock::now();
  const SweepOutcome out = run_sweep(o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(wall, 30);
  const json& res = out.results;
  auto rec = records_by_config(res);
  ASSERT_EQ(rec.size(), 9u);  // 4 tiles + abort, hang, throw, wrong, slow
  auto status = [&](const char* behave) {
    return (*rec.at("behave=" + std::string(behave) + ",tile=16"))["status"].get<std::string>();
  };
  EXPECT_EQ(status("abort"), "crashed");
  EXPECT_NE((*rec.at("behave=abort,tile=16"))["error"].get<std::string>().find("signal 6"), std::string::npos);
  EXPECT_EQ(status("hang"), "timeout");
  EXPECT_EQ(status("throw"), "failed");
  EXPECT_EQ(status("wrong"), "invalid");
  const json& wrong = *rec.at("behave=wrong,tile=16");
  EXPECT_FALSE(wrong["validation"]["ok"].get<bool>());
  EXPECT_GT(wrong["validation"]["checks"][0]["max_rel"].get<double>(), 0.005);
  EXPECT_EQ(wrong["stats"]["n"], 0);  // never timed
  EXPECT_EQ(status("slow"), "ok");
  EXPECT_TRUE((*rec.at("behave=slow,tile=16"))["early_stop"].get<bool>());
  for (int t : {4, 16, 64, 256}) EXPECT_EQ((*rec.at("behave=normal,tile=" + std::to_string(t)))["status"], "ok");
  ASSERT_EQ(res["points"].size(), 1u);
  const json& p = res["points"][0];
  EXPECT_EQ(p["evaluated"], 9);
  // Timed: the five that ran correctly; the crash, hang, throw and wrong one were not.
  EXPECT_EQ(p["timed"], 5);
  EXPECT_EQ(p["not_usable"], 4);
  EXPECT_EQ(out.timed, 5);
  EXPECT_NE(out.summary_md.find("5 of 9 candidates timed"), std::string::npos) << out.summary_md;
  EXPECT_NE(out.summary_md.find("| 5/9 | 4 |"), std::string::npos) << out.summary_md;
  EXPECT_NE(p["winner"]["config_key"].get<std::string>().find("behave=normal"), std::string::npos);
  EXPECT_NE(out.summary_md.find("not usable"), std::string::npos);
  fs::remove_all(d);
}

TEST(TunerRunner, KillNineThenResumeRunsEveryRecordExactlyOnce) {
  const fs::path d = temp_dir("runner-kill");
  SweepOptions o = options(d, scale_problem(256), {1, 2, 4, 8, 16, 32, 64, 128});
  const pid_t child = sweep_in_child(o);
  ASSERT_GT(child, 0);
  const bool reached = wait_for_evals(d / "journal.jsonl", 12, 60);
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(reached) << "the sweep did not get going";
  ASSERT_TRUE(WIFSIGNALED(st)) << "the sweep finished before it could be killed";
  const JournalContents before = read_journal((d / "journal.jsonl").string());
  EXPECT_LT(count_type(before, "point"), 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // orphaned workers die with their parent

  o.resume = true;
  const SweepOutcome out = run_sweep(o);
  EXPECT_FALSE(out.interrupted);
  const JournalContents after = read_journal((d / "journal.jsonl").string());
  // What was done before the kill is kept verbatim and not redone.
  ASSERT_GE(after.lines.size(), before.lines.size());
  for (std::size_t i = 0; i < before.lines.size(); ++i) EXPECT_EQ(after.lines[i], before.lines[i]) << "line " << i;
  expect_unique_lines(after);
  EXPECT_EQ(count_type(after, "point"), 8);
  EXPECT_EQ(count_type(after, "prep"), 8);
  expect_unique_records(out.results);
  int evaluated = 0;
  for (auto& p : out.results["points"]) evaluated += p["evaluated"].get<int>();
  EXPECT_EQ(out.results["points"].size(), 8u);
  EXPECT_EQ(static_cast<int>(out.results["records"].size()), evaluated);
  EXPECT_EQ(out.tables.size(), 1u);
  // Resuming a finished sweep does no work at all.
  const SweepOutcome again = run_sweep(o);
  EXPECT_EQ(read_journal((d / "journal.jsonl").string()).lines.size(), after.lines.size());
  json a = again.results["records"], b = out.results["records"];
  for (json* rs : {&a, &b})
    for (auto& r : *rs) r.erase("pct_peak");  // the copy bandwidth is probed again on every run
  EXPECT_EQ(a, b);
  fs::remove_all(d);
}

TEST(TunerRunner, SigintStopsAfterTheCurrentCandidateAndResumes) {
  const fs::path d = temp_dir("runner-sigint");
  SweepOptions o = options(d, scale_problem(256), {1, 2, 4, 8, 16, 32, 64, 128});
  o.handle_signals = true;
  const pid_t child = sweep_in_child(o);
  const bool reached = wait_for_evals(d / "journal.jsonl", 6, 60);
  ::kill(child, SIGINT);
  int st = 0;
  ::waitpid(child, &st, 0);
  ASSERT_TRUE(reached);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 130) << "the sweep did not stop on SIGINT";
  // Flushed: partial results exist and the journal is whole.
  const json partial = read_results(d.string());
  EXPECT_LT(partial["points"].size(), 8u);
  EXPECT_FALSE(read_journal((d / "journal.jsonl").string()).torn_tail);
  o.resume = true;
  o.handle_signals = false;
  const SweepOutcome out = run_sweep(o);
  EXPECT_EQ(out.results["points"].size(), 8u);
  expect_unique_lines(read_journal((d / "journal.jsonl").string()));
  fs::remove_all(d);
}

TEST(TunerRunner, ResumeRefusesAnotherSpaceDeviceOrBinary) {
  const fs::path d = temp_dir("runner-refuse");
  SweepOptions o = options(d, scale_problem(64), {1});
  run_sweep(o);
  auto message = [&](const SweepOptions& x) {
    try {
      run_sweep(x);
    } catch (const moe::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SweepOptions other = o;
  other.resume = true;
  other.tokens = {1, 2};
  EXPECT_NE(message(other).find("another space"), std::string::npos);
  EXPECT_NE(message(other).find("tokens: 1 vs 1,2"), std::string::npos) << message(other);
  other.tokens = {1};
  other.units[0].problem = scale_problem(1024);
  EXPECT_NE(message(other).find("scale width: 64 vs 1024"), std::string::npos) << message(other);
  other.units[0].problem = o.units[0].problem;
  other.strategy = Strategy::exhaustive;
  EXPECT_NE(message(other).find("other search settings"), std::string::npos);
  EXPECT_NE(message(other).find("strategy: halving vs exhaustive"), std::string::npos) << message(other);
  // Without --resume the existing journal is not overwritten.
  EXPECT_NE(message(o).find("--resume"), std::string::npos);
  // A journal from another device or binary.
  const std::string jp = (d / "journal.jsonl").string();
  const JournalContents j = read_journal(jp);
  for (auto [field, value, says] : {std::tuple{"device", "NVIDIA H200", "another device"},
                                    std::tuple{"binary", "0.0.1+old", "another moebench binary"}}) {
    json h = j.header;
    h[field] = value;
    std::ofstream out(jp, std::ios::trunc);
    out << h.dump() << "\n";
    for (auto& l : j.lines) out << l.dump() << "\n";
    out.close();
    SweepOptions r = o;
    r.resume = true;
    EXPECT_NE(message(r).find(says), std::string::npos) << field;
  }
  SweepOptions missing = o;
  missing.resume = true;
  missing.out_dir = (d / "nothing-here").string();
  EXPECT_NE(message(missing).find("no journal"), std::string::npos);
  fs::remove_all(d);
}

TEST(TunerRunner, ShardsAreDisjointCompleteAndMerge) {
  const fs::path d = temp_dir("runner-shards");
  const std::vector<std::int64_t> tokens = {1, 2, 4, 8, 16};
  std::set<int> all;
  std::vector<std::string> dirs;
  std::size_t records = 0;
  for (int i = 0; i < 2; ++i) {
    SweepOptions o = options(d / ("shard" + std::to_string(i)), scale_problem(128), tokens);
    o.shard = {i, 2};
    o.tables_dir.clear();
    o.strategy = Strategy::exhaustive;
    const SweepOutcome out = run_sweep(o);
    for (auto& p : out.results["points"]) EXPECT_TRUE(all.insert(p["point_index"].get<int>()).second) << "shards overlap";
    records += out.results["records"].size();
    dirs.push_back(o.out_dir);
  }
  EXPECT_EQ(all, (std::set<int>{0, 1, 2, 3, 4}));
  const MergeOutcome m = merge_sweeps(dirs, (d / "merged").string(), (d / "tables").string());
  EXPECT_TRUE(m.shards_missing.empty());
  EXPECT_EQ(m.duplicates, 0);
  EXPECT_EQ(m.results["points"].size(), 5u);
  EXPECT_EQ(m.results["records"].size(), records);
  expect_unique_records(m.results);
  ASSERT_EQ(m.tables.size(), 1u);
  EXPECT_EQ(moe::runtime::load_table(m.tables[0]).entries.size(), 5u);
  EXPECT_TRUE(fs::exists(d / "merged" / "summary.md"));
  // A shard given twice is deduplicated, and the missing one is named.
  const MergeOutcome twice = merge_sweeps({dirs[0], dirs[0]}, (d / "twice").string(), "");
  EXPECT_GT(twice.duplicates, 0);
  EXPECT_EQ(twice.shards_missing, std::vector<int>{1});
  // A sweep of another space does not merge.
  SweepOptions x = options(d / "other", scale_problem(128), {3});
  x.tables_dir.clear();
  x.shard = {1, 2};
  x.strategy = Strategy::exhaustive;
  run_sweep(x);
  try {
    merge_sweeps({dirs[0], x.out_dir}, (d / "bad").string(), "");
    ADD_FAILURE() << "two different sweeps merged";
  } catch (const moe::Error& e) {
    // Not resume advice: merging different sweeps cannot be made to work.
    const std::string m = e.what();
    EXPECT_NE(m.find("are not shards of one sweep (they differ in "), std::string::npos) << m;
    EXPECT_NE(m.find("tokens"), std::string::npos) << m;
    EXPECT_EQ(m.find("resume"), std::string::npos) << m;
  }
  fs::remove_all(d);
}

// The journal a worker killed while preparing a point leaves: that point ended in an error,
// with no prep or eval lines. Resuming measures it again, and the new outcome must replace the
// error everywhere: results, summary, the table, and a merge of the shard.
TEST(TunerRunner, ResumeReplacesAPointWhosePreparationCrashed) {
  const fs::path d = temp_dir("runner-prep-crash");
  SweepOptions o = options(d, scale_problem(256), {1, 32});
  run_sweep(o);
  const fs::path jpath = d / "journal.jsonl";
  const JournalContents done = read_journal(jpath.string());
  std::string victim;
  json point_line;
  for (auto& l : done.lines)
    if (l.value("type", "") == "point" && l.value("tokens", 0) == 32) point_line = l;
  ASSERT_TRUE(point_line.is_object());
  victim = point_line["point"].get<std::string>();
  {
    std::ifstream in(jpath);
    std::vector<std::string> keep;
    for (std::string line; std::getline(in, line);)
      if (line.find(json(victim).dump()) == std::string::npos) keep.push_back(line);
    json crashed = point_line;
    for (const char* k : {"winner", "runner_up", "default", "rounds", "budget_hit"}) crashed.erase(k);
    crashed["evaluated"] = 0;
    crashed["error"] = "preparing the problem: the worker died (signal 9)";
    keep.push_back(crashed.dump());
    std::ofstream out(jpath, std::ios::trunc);
    for (auto& line : keep) out << line << "\n";
  }
  fs::remove_all(d / "tables");

  o.resume = true;
  const SweepOutcome out = run_sweep(o);
  EXPECT_TRUE(out.failed_points.empty()) << out.failed_points.front();
  ASSERT_EQ(out.results["points"].size(), 2u);
  for (auto& p : out.results["points"]) {
    EXPECT_FALSE(p.contains("error")) << p.dump();
    EXPECT_TRUE(p.contains("winner")) << p.dump();
  }
  EXPECT_EQ(out.summary_md.find("worker died"), std::string::npos) << out.summary_md;
  ASSERT_EQ(out.tables.size(), 1u);
  EXPECT_EQ(moe::runtime::load_table(out.tables[0]).entries.size(), 2u);
  // The repaired journal also merges into the repaired outcome.
  const MergeOutcome m = merge_sweeps({d.string()}, (d / "merged").string(), "");
  for (auto& p : m.results["points"]) EXPECT_FALSE(p.contains("error")) << p.dump();
  // Resuming again changes nothing: the point is not journaled a third time.
  const std::size_t lines = read_journal(jpath.string()).lines.size();
  run_sweep(o);
  EXPECT_EQ(read_journal(jpath.string()).lines.size(), lines);
  fs::remove_all(d);
}

// Two copies of one sweep where one holds a crashed copy of a point the other finished (its
// worker died preparing it): merged in either order, every point keeps its winner and the table
// every entry. A later error record must never replace an earlier success.
TEST(TunerRunner, MergeKeepsTheWinnerOverACrashedCopyInEitherOrder) {
  const fs::path d = temp_dir("runner-merge-crash");
  SweepOptions o = options(d / "done", scale_problem(256), {1, 8, 32});
  o.tables_dir.clear();
  run_sweep(o);
  const fs::path crashed_dir = d / "crashed";
  fs::create_directories(crashed_dir);
  const JournalContents done = read_journal((d / "done" / "journal.jsonl").string());
  std::string victim;
  {
    std::ofstream out(crashed_dir / "journal.jsonl", std::ios::trunc);
    out << done.header.dump() << "\n";
    for (auto& l : done.lines) {
      const bool is_victim = l.value("type", "") == "point" && l.value("tokens", 0) == 8;
      if (!is_victim) {
        out << l.dump() << "\n";
        continue;
      }
      victim = l["point"].get<std::string>();
      json crashed = l;
      for (const char* k : {"winner", "runner_up", "default", "rounds", "budget_hit"}) crashed.erase(k);
      crashed["evaluated"] = 0;
      crashed["error"] = "preparing the problem: the worker died (signal 9)";
      out << crashed.dump() << "\n";
    }
  }
  ASSERT_FALSE(victim.empty());
  const std::vector<std::vector<std::string>> orders = {{(d / "done").string(), crashed_dir.string()},
                                                       {crashed_dir.string(), (d / "done").string()}};
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const fs::path out = d / ("merged" + std::to_string(i));
    const MergeOutcome m = merge_sweeps(orders[i], out.string(), (out / "tables").string());
    ASSERT_EQ(m.results["points"].size(), 3u) << "order " << i;
    for (auto& p : m.results["points"]) {
      EXPECT_FALSE(p.contains("error")) << "order " << i << ": " << p.dump();
      EXPECT_TRUE(p.contains("winner")) << "order " << i << ": " << p.dump();
    }
    ASSERT_EQ(m.tables.size(), 1u) << "order " << i;
    EXPECT_EQ(moe::runtime::load_table(m.tables[0]).entries.size(), 3u) << "order " << i;
    EXPECT_EQ(m.summary_md.find("worker died"), std::string::npos) << "order " << i << "\n" << m.summary_md;
  }
  fs::remove_all(d);
}

TEST(TunerRunner, SpaceFileBudgetAndSkippedPoints) {
  const fs::path d = temp_dir("runner-space");
  const fs::path space = d / "space.json";
  std::ofstream(space) << R"([{"tile": 8}, {"tile": 2048}, {"tile": 8}, {"tile": 32, "behave": "normal"}])";
  SweepOptions o = options(d / "out", scale_problem(256), {4});
  o.units.push_back({&moe::testing::scale_family(), scale_problem(13)});  // rejected by the family
  o.space = space.string();
  const SweepOutcome out = run_sweep(o);
  auto rec = records_by_config(out.results);
  ASSERT_EQ(rec.size(), 4u);  // tile 8, 2048 (invalid), 32, and the default tile 16
  EXPECT_EQ((*rec.at("behave=normal,tile=2048"))["status"], "invalid");
  EXPECT_NE((*rec.at("behave=normal,tile=2048"))["error"].get<std::string>().find("4x the width"), std::string::npos);
  EXPECT_TRUE((*rec.at("behave=normal,tile=16"))["is_default"].get<bool>());
  ASSERT_EQ(out.results["points"].size(), 2u);
  EXPECT_NE(out.results["points"][1]["error"].get<std::string>().find("unlucky"), std::string::npos);
  EXPECT_NE(out.summary_md.find("skipped: scale: scale: width 13"), std::string::npos) << out.summary_md;

  SweepOptions b = options(d / "budget", scale_problem(256), {4, 8});
  b.budget.candidates = 2;
  b.budget.text = "2";
  const SweepOutcome ob = run_sweep(b);
  for (auto& p : ob.results["points"]) {
    EXPECT_EQ(p["evaluated"], 2);
    EXPECT_EQ(p["total"], 4);
    EXPECT_TRUE(p["budget_hit"].get<bool>());
  }
  EXPECT_NE(ob.summary_md.find("4 of 8 candidates timed"), std::string::npos) << ob.summary_md;
  fs::remove_all(d);
}
