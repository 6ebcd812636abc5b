// End-to-end tests of the sweep, lookup and merge commands through the moebench binary.
// They need a real family with a cpu backend: on a branch where the families are still
// placeholders they skip, and run once the kernels are merged.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "support/temp_dirs.hpp"
#include "common/rng.hpp"
#include "io/npy.hpp"
#include "moe/family.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/results.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

bool router_ready() {
  const moe::FamilyDesc& f = moe::family("router");
  return f.backend(moe::Backend::cpu) != nullptr;
}

#define NEED_ROUTER()                                                                         \
  if (!router_ready()) GTEST_SKIP() << "the router family has no cpu backend in this build"

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir("cli-" + name); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const fs::path o = fs::temp_directory_path() / ("moebench-cli-out-" + std::to_string(::getpid()));
  const fs::path e = fs::temp_directory_path() / ("moebench-cli-err-" + std::to_string(::getpid()));
  const int st = std::system((std::string(MOEBENCH_EXE) + " " + args + " > " + o.string() + " 2> " + e.string()).c_str());
  CliRun r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  fs::remove(o);
  fs::remove(e);
  return r;
}

pid_t spawn(const std::string& args, const fs::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string cmd = "exec " + std::string(MOEBENCH_EXE) + " " + args + " > /dev/null 2> " + err.string();
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

std::size_t evals(const fs::path& journal) {
  std::ifstream in(journal);
  std::size_t n = 0;
  for (std::string l; std::getline(in, l);) n += l.find("\"type\":\"eval\"") != std::string::npos;
  return n;
}

bool wait_evals(const fs::path& journal, std::size_t n, double timeout_s) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
    if (fs::exists(journal) && evals(journal) >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void expect_each_once(const fs::path& dir) {
  const JournalContents j = read_journal((dir / "journal.jsonl").string());
  std::set<std::string> seen;
  for (auto& l : j.lines) {
    std::string k = l.value("type", "") + "|" + l.value("point", "");
    if (l.value("type", "") == "eval") k += "|" + l.value("config_key", "") + "|" + std::to_string(l.value("round", -1));
    EXPECT_TRUE(seen.insert(k).second) << "repeated " << k;
  }
  std::set<std::string> recs;
  for (auto& r : read_results(dir.string())["records"])
    EXPECT_TRUE(recs.insert(r.value("kernel", "") + r.value("problem_key", "") + std::to_string(r.value("tokens", 0)) +
                            r.value("config_key", ""))
                    .second);
}

// Quick measurement settings: these tests check the plumbing, not the numbers.
const std::string kFast = " --backend cpu --threads 2 --quiet --min-time 1ms --max-time 50ms --watchdog 20s";

}  // namespace

TEST(TunerCli, SweepRouterThenLookupAnswersFromTheTable) {
  NEED_ROUTER();
  const fs::path d = temp_dir("router");
  const CliRun s = run("sweep router --model qwen3-30b-a3b --tokens 1,16,256 --out " + (d / "out").string() + " --tables " +
                    (d / "tables").string() + kFast);
  ASSERT_EQ(s.code, 0) << s.err;
  for (auto* f : {"journal.jsonl", "results.json", "results.csv", "summary.md"}) EXPECT_TRUE(fs::exists(d / "out" / f)) << f;
  EXPECT_NE(s.out.find("candidates timed"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("table: "), std::string::npos) << s.out;
  const json res = read_results((d / "out").string());
  EXPECT_EQ(res["points"].size(), 3u);
  for (auto& p : res["points"]) EXPECT_TRUE(p.contains("chosen")) << p.dump();
  expect_each_once(d / "out");

  CliRun l = run("lookup router --model qwen3-30b-a3b --tokens 16 --backend cpu --tables " + (d / "tables").string());
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find(": exact"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find((d / "tables" / "cpu" / "router").string()), std::string::npos) << l.out;
  l = run("lookup router --model qwen3-30b-a3b --tokens 4,64 --backend cpu --json --tables " + (d / "tables").string());
  ASSERT_EQ(l.code, 0) << l.err;
  std::istringstream lines(l.out);
  std::string a, b;
  std::getline(lines, a);
  std::getline(lines, b);
  EXPECT_EQ(json::parse(a)["match"], "nearest");
  EXPECT_EQ(json::parse(a)["entry_tokens"], 1);  // 4/1 == 16/4: the tie goes to the smaller key
  EXPECT_EQ(json::parse(b)["entry_tokens"], 16);  // 64/16 == 256/64: smaller again
  // No table: the default, with the warning naming the file and the command that would make it.
  l = run("lookup router --model qwen3-30b-a3b --tokens 16 --backend cpu --tables " + (d / "empty").string());
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find(": default"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("moebench sweep router"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("does not exist"), std::string::npos) << l.out;
  fs::remove_all(d);
}

// Without tables, the layer's five stages fall back to their defaults: one short line each (they
// were ~500 characters apiece), and once the one command that tunes them all.
TEST(TunerCli, RunLayerWithoutTablesWarnsInShortLines) {
  NEED_ROUTER();
  const fs::path d = temp_dir("layer-warn");
  fs::create_directories(d / "empty");
  ::setenv("MOEBENCH_CONFIG_DIR", (d / "empty").c_str(), 1);
  const CliRun r = run("run moe-layer --model qwen3-30b-a3b --hidden 512 --intermediate 256 --tokens 4 --backend cpu --repeat 1");
  ::unsetenv("MOEBENCH_CONFIG_DIR");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.err);
  std::vector<std::string> warnings;
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("moebench: warning: ", 0) == 0) warnings.push_back(l);
  ASSERT_EQ(warnings.size(), 6u) << r.err;
  for (const char* stage : {"router", "dispatch", "gmm_up", "gmm_down", "combine"})
    EXPECT_NE(r.err.find(std::string("moe-layer stage ") + stage + ": no "), std::string::npos) << stage << "\n" << r.err;
  const std::string cmd = "moebench sweep moe-layer ";
  EXPECT_EQ(warnings.back().find("moe-layer: tune its stages with: " + cmd), 19u) << warnings.back();
  EXPECT_NE(warnings.back().find("--hidden 512 --intermediate 256"), std::string::npos) << warnings.back();
  EXPECT_NE(warnings.back().find("--tables " + (d / "empty").string()), std::string::npos) << warnings.back();
  for (auto& w : warnings) EXPECT_LT(w.size(), 160 + (d / "empty").string().size()) << w;
  fs::remove_all(d);
}

TEST(TunerCli, SweepAllCoversEveryFamilyWithTheBackend) {
  NEED_ROUTER();
  const fs::path d = temp_dir("all");
  const CliRun s = run("sweep all --model qwen3-30b-a3b --hidden 512 --intermediate 256 --tokens 1,16 --out " + (d / "out").string() + " --tables " +
                    (d / "tables").string() + " --budget 3" + kFast);
  ASSERT_EQ(s.code, 0) << s.err;
  const json res = read_results((d / "out").string());
  std::set<std::string> kernels;
  for (auto& p : res["points"]) kernels.insert(p["kernel"].get<std::string>());
  for (const moe::FamilyDesc* f : moe::families())
    if (f->backend(moe::Backend::cpu)) {
      EXPECT_TRUE(kernels.count(f->name)) << f->name;
    }
  for (auto& p : res["points"])
    if (!p.contains("error")) {
      EXPECT_LE(p["evaluated"].get<int>(), 3);
    }
  const CliRun l = run("lookup router --model qwen3-30b-a3b --tokens 16 --backend cpu --tables " + (d / "tables").string());
  EXPECT_NE(l.out.find(": exact"), std::string::npos) << l.out << l.err;
  fs::remove_all(d);
}

TEST(TunerCli, KillNineThenResumeFinishesWithoutRepeatingWork) {
  NEED_ROUTER();
  const fs::path d = temp_dir("kill");
  const std::string args = "sweep router --model qwen3-30b-a3b --tokens 1,2,4,8,16,32,64,128,256 --out " +
                           (d / "out").string() + " --tables none" + kFast;
  const pid_t pid = spawn(args, d / "err1");
  const bool reached = wait_evals(d / "out" / "journal.jsonl", 10, 120);
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(reached) << slurp(d / "err1");
  ASSERT_TRUE(WIFSIGNALED(st)) << "finished before the kill; make the sweep longer";
  const JournalContents before = read_journal((d / "out" / "journal.jsonl").string());
  // Without --resume the journal is protected.
  CliRun r = run(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  // A resume with other token counts is refused with a clear message.
  r = run("sweep router --model qwen3-30b-a3b --tokens 1,2 --out " + (d / "out").string() + " --resume --tables none" + kFast);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("another space"), std::string::npos) << r.err;
  r = run(args + " --resume");
  ASSERT_EQ(r.code, 0) << r.err;
  const JournalContents after = read_journal((d / "out" / "journal.jsonl").string());
  ASSERT_GE(after.lines.size(), before.lines.size());
  for (std::size_t i = 0; i < before.lines.size(); ++i) EXPECT_EQ(after.lines[i], before.lines[i]);
  expect_each_once(d / "out");
  EXPECT_EQ(read_results((d / "out").string())["points"].size(), 9u);
  fs::remove_all(d);
}

TEST(TunerCli, CtrlCFlushesAndPrintsTheResumeCommand) {
  NEED_ROUTER();
  const fs::path d = temp_dir("sigint");
  const pid_t pid = spawn("sweep router --model qwen3-30b-a3b --tokens 1,2,4,8,16,32,64,128,256 --out " +
                              (d / "out").string() + " --tables none" + kFast,
                          d / "err");
  const bool reached = wait_evals(d / "out" / "journal.jsonl", 5, 120);
  ::kill(pid, SIGINT);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(reached);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  const std::string err = slurp(d / "err");
  EXPECT_NE(err.find("interrupted: resume with: " + fs::canonical(MOEBENCH_EXE).string() + " sweep router"), std::string::npos) << err;
  EXPECT_NE(err.find("--resume"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(d / "out" / "results.json"));
  fs::remove_all(d);
}

TEST(TunerCli, ShardsMergeAndJsonProgress) {
  NEED_ROUTER();
  const fs::path d = temp_dir("shards");
  for (int i = 0; i < 2; ++i) {
    const CliRun s = run("sweep router --model qwen3-30b-a3b --tokens 1,4,16 --strategy exhaustive --shard " +
                      std::to_string(i) + "/2 --out " + (d / ("s" + std::to_string(i))).string() + " --tables none" + kFast);
    ASSERT_EQ(s.code, 0) << s.err;
  }
  const CliRun m = run("merge " + (d / "s0").string() + " " + (d / "s1").string() + " --out " + (d / "m").string());
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(read_results((d / "m").string())["points"].size(), 3u);
  expect_each_once(d / "m");
  // Machine-readable progress: every stdout line is a JSON event, the last one "done".
  const CliRun j = run("sweep router --model qwen3-30b-a3b --tokens 4 --json --out " + (d / "j").string() +
                    " --tables none --backend cpu --threads 2 --min-time 1ms --max-time 50ms");
  ASSERT_EQ(j.code, 0) << j.err;
  std::istringstream lines(j.out);
  json last;
  int n = 0;
  for (std::string l; std::getline(lines, l); ++n) last = json::parse(l);
  EXPECT_GT(n, 3);
  EXPECT_EQ(last["event"], "done");
  fs::remove_all(d);
}

TEST(TunerCli, SweepReplaysCapturedRoutingAndZipf) {
  NEED_ROUTER();
  const fs::path d = temp_dir("replay");
  moe::Tensor logits(moe::DType::f32, {8, 128});  // qwen3-30b-a3b: 128 experts
  moe::Rng rng(5);
  for (std::int64_t i = 0; i < logits.numel(); ++i) logits.set(i, rng.normal());
  moe::write_npy((d / "logits.npy").string(), logits);
  CliRun s = run("sweep router --model qwen3-30b-a3b --tokens 4,32 --budget 2 --dist " + (d / "logits.npy").string() +
                 " --out " + (d / "a").string() + " --tables none" + kFast);
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(read_results((d / "a").string())["meta"]["dist"], (d / "logits.npy").string());
  s = run("sweep router --model qwen3-30b-a3b --tokens 4 --budget 2 --dist zipf --out " + (d / "b").string() +
          " --tables none" + kFast);
  ASSERT_EQ(s.code, 0) << s.err;
  // Captured logits for another expert count: the point fails with the reason, the results are
  // still written, and the sweep exits 1 saying so.
  moe::write_npy((d / "bad.npy").string(), moe::Tensor(moe::DType::f32, {8, 7}));
  s = run("sweep router --model qwen3-30b-a3b --tokens 4 --dist " + (d / "bad.npy").string() + " --out " +
          (d / "c").string() + " --tables none" + kFast);
  ASSERT_EQ(s.code, 1) << s.err;
  const json bad = read_results((d / "c").string());
  ASSERT_EQ(bad["points"].size(), 1u);
  EXPECT_NE(bad["points"][0].value("error", "").find("128"), std::string::npos) << bad["points"][0].dump();
  fs::remove_all(d);
}

TEST(TunerCli, ClearErrors) {
  CliRun r = run("sweep no-such-kernel --backend cpu --out /tmp/never");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown kernel family 'no-such-kernel'"), std::string::npos) << r.err;
  r = run("sweep router --backend cpu --strategy greedy --out /tmp/never");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("exhaustive, random or halving"), std::string::npos) << r.err;
  r = run("worker");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("started by `moebench sweep`"), std::string::npos) << r.err;
}

// A point that cannot run is a row in the summary and makes the sweep fail, so CI notices;
// the points that did run still write their results.
TEST(TunerCli, PointsThatCouldNotRunFailTheSweep) {
  const fs::path out = fs::temp_directory_path() / ("moebench-nopoint-" + std::to_string(::getpid()));
  fs::remove_all(out);
  CliRun r = run("sweep router --backend cpu --tokens 4,1000000000 --tables none --progress plain --out " + out.string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("1 of 2 points could not run"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  const json res = json::parse(slurp(out / "results.json"));
  bool timed = false;
  for (auto& rec : res["records"]) timed = timed || (rec.value("tokens", 0) == 4 && rec.value("status", "") == "ok");
  EXPECT_TRUE(timed) << "the point that could run was measured";
  fs::remove_all(out);
  // A replay file that cannot be read is an input error found before sweeping: nothing runs.
  r = run("sweep router --backend cpu --tokens 4 --dist /nonexistent-moebench.npy --tables none --progress plain --out " +
          out.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("nonexistent-moebench.npy"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "journal.jsonl"));
  fs::remove_all(out);
}

// An unwritable --tables is refused at the start (exit 2), before any point is measured; so is
// `merge --out` naming one of its inputs.
TEST(TunerCli, TablesAndMergeOutputsAreCheckedFirst) {
  const fs::path out = fs::temp_directory_path() / ("moebench-tables-check-" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  std::ofstream(out / "a-file") << "x";
  CliRun r = run("sweep router --backend cpu --tokens 4 --progress plain --tables " + (out / "a-file").string() +
                 " --out " + (out / "sweep").string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "sweep" / "journal.jsonl")) << "nothing is measured before the check";
  r = run("sweep router --backend cpu --tokens 4 --progress plain --tables none --out " + (out / "s").string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string before = slurp(out / "s" / "journal.jsonl");
  r = run("merge " + (out / "s").string() + " --out " + (out / "s").string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out / "s" / "journal.jsonl"), before) << "the shard's journal is untouched";
  fs::remove_all(out);
}

namespace {

// Every stage of every moe-layer record ran the entry of the table it names, and that table is
// in `tables`: the layer was timed with the configs this sweep chose for its stages.
// Beside them, per token count, the baseline: every stage at its family default, which the
// point's "vs default" compares the tuned layer with.
void expect_layer_timed_with_tables(const json& res, const fs::path& tables, std::size_t n_tokens) {
  std::size_t layers = 0, baselines = 0;
  for (auto& r : res["records"]) {
    if (r.value("kernel", "") != "moe-layer") continue;
    if (r.value("is_default", false)) {
      ++baselines;
      EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
      for (const char* stage : {"router", "dispatch", "gmm_up", "gmm_down", "combine"})
        EXPECT_EQ(r["config_source"][stage].value("how", ""), "family default") << stage << " " << r.dump();
      continue;
    }
    ++layers;
    EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
    ASSERT_TRUE(r.contains("config_source") && r.contains("resolved_config")) << r.dump();
    const std::string tokens = std::to_string(r.value("tokens", 0));
    for (const char* stage : {"router", "dispatch", "gmm_up", "gmm_down", "combine"}) {
      const json& src = r["config_source"][stage];
      EXPECT_EQ(src.value("how", ""), "exact") << stage << " " << src.dump();
      const fs::path table = src.value("table", "");
      EXPECT_EQ(table.string().rfind(tables.string() + "/", 0), 0u) << stage << " " << table;
      const json t = json::parse(slurp(table));
      ASSERT_TRUE(t["entries"].contains(tokens)) << table;
      EXPECT_EQ(src["config"], t["entries"][tokens]["config"]) << stage;
      // What the worker ran: the same config, as the layer's stage text.
      const std::string text = r["resolved_config"].value(stage, "");
      for (auto& [k, v] : src["config"].items()) {
        const std::string kv = k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
        EXPECT_NE((";" + text + ";").find(";" + kv + ";"), std::string::npos) << stage << ": " << kv << " in " << text;
      }
    }
  }
  EXPECT_EQ(layers, n_tokens);
  EXPECT_EQ(baselines, n_tokens);
  for (auto& p : res["points"]) {
    if (p.value("kernel", "") != "moe-layer") continue;
    ASSERT_TRUE(p.contains("chosen") && p.contains("default") && p.contains("speedup_vs_default")) << p.dump();
    EXPECT_NEAR(p["speedup_vs_default"].get<double>(),
                p["default"]["median_us"].get<double>() / p["chosen"]["median_us"].get<double>(), 1e-6)
        << p.dump();
  }
}

const std::string kLayerShape = " --experts 8 --topk 2 --hidden 64 --intermediate 32 --align 4 --tokens 3,16 --budget 2";
const std::string kLayerFast = " --backend cpu --threads 2 --progress plain --min-time 1ms --max-time 30ms --watchdog 20s";

}  // namespace

TEST(TunerCli, SweepLayerTimesTheLayerWithTheStageTablesItWrote) {
  NEED_ROUTER();
  const fs::path d = temp_dir("layer");
  const CliRun s = run("sweep moe-layer" + kLayerShape + " --out " + (d / "out").string() + " --tables " +
                       (d / "tables").string() + kLayerFast);
  ASSERT_EQ(s.code, 0) << s.err;
  // Neither the plan nor the layer's workers fell back to a stage default.
  EXPECT_EQ(s.err.find("warning"), std::string::npos) << s.err;
  const json res = read_results((d / "out").string());
  EXPECT_EQ(res["meta"].value("stage_tables", ""), (d / "tables").string());
  expect_layer_timed_with_tables(res, d / "tables", 2);
  // The summary shows the stage configs, named by what the chosen candidate asked for: the
  // tables' choice (auto) or every stage's family default (the baseline, when it won or was kept).
  for (auto& p : res["points"]) {
    if (p.value("kernel", "") != "moe-layer") continue;
    const bool baseline = p["chosen"]["config"].value("router", "") == "default";
    EXPECT_NE(s.out.find("| " + std::to_string(p.value("tokens", 0)) + (baseline ? " | default: combine=" : " | auto: combine=")),
              std::string::npos)
        << s.out;
  }
  fs::remove_all(d);
}

TEST(TunerCli, SweepLayerWithTablesNoneUsesItsOwnTableFolder) {
  NEED_ROUTER();
  const fs::path d = temp_dir("layer-none");
  const CliRun s = run("sweep moe-layer" + kLayerShape + " --out " + (d / "out").string() + " --tables none" + kLayerFast);
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.err.find("warning"), std::string::npos) << s.err;
  EXPECT_EQ(s.out.find("table: "), std::string::npos) << s.out;  // none go where runtime dispatch looks
  const json res = read_results((d / "out").string());
  EXPECT_EQ(res["meta"].value("stage_tables", ""), (d / "out" / "tables").string());
  expect_layer_timed_with_tables(res, d / "out" / "tables", 2);
  fs::remove_all(d);
}
