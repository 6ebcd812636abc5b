// A sweep stopped inside its first point, after the first candidate was journaled and before
// any point line: by kill -9, and by Ctrl-C (SIGINT). The stop comes from inside the second
// candidate (the scale family's behave=signal), so it lands at the same place every run.
// Resuming must replay what was journaled, not redo it: every prep and eval record once, one
// prep per point.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>

#include "support/temp_dirs.hpp"
#include "tuner/store/journal.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;

namespace {

constexpr int kPoints = 3;

// Runs a sweep whose first non-default candidate sends `signal`, waits for it, and checks the
// journal it left is cut inside the first point. Returns the options, to resume with.
SweepOptions stopped_sweep(const fs::path& d, const std::string& signal, int& status) {
  moe::Params problem = scale_problem(256);
  problem.set("signal", signal);
  SweepOptions o = options(d, problem, {1, 2, 4});
  o.handle_signals = signal == "interrupt";
  ::setenv("MOEBENCH_TEST_SIGNAL_ONCE", (d / "signalled").c_str(), 1);
  const pid_t child = sweep_in_child(o);
  EXPECT_GT(child, 0);
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(fs::exists(d / "signalled")) << "no candidate sent the signal";
  const JournalContents j = read_journal((d / "journal.jsonl").string());
  EXPECT_EQ(count_type(j, "point"), 0) << "the sweep got past its first point";
  EXPECT_EQ(count_type(j, "prep"), 1);
  EXPECT_GE(count_type(j, "eval"), 1) << "stopped before the first candidate was journaled";
  return o;
}

void expect_resumed_once(SweepOptions o) {
  o.resume = true;
  o.handle_signals = false;
  const SweepOutcome out = run_sweep(o);
  ::unsetenv("MOEBENCH_TEST_SIGNAL_ONCE");
  EXPECT_FALSE(out.interrupted);
  const JournalContents j = read_journal(out.journal_path);
  expect_unique_lines(j);
  EXPECT_EQ(count_type(j, "prep"), kPoints);
  EXPECT_EQ(count_type(j, "point"), kPoints);
  EXPECT_EQ(out.results["points"].size(), static_cast<std::size_t>(kPoints));
  EXPECT_TRUE(out.failed_points.empty()) << out.failed_points.front();
}

}  // namespace

TEST(TunerResumeFirstPoint, KillNineInsideTheFirstPointThenResume) {
  const fs::path d = moe::testing::fresh_temp_dir("resume-first-kill");
  int st = 0;
  const SweepOptions o = stopped_sweep(d, "kill", st);
  ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "status " << st;
  expect_resumed_once(o);
  fs::remove_all(d);
}

TEST(TunerResumeFirstPoint, SigintInsideTheFirstPointThenResume) {
  const fs::path d = moe::testing::fresh_temp_dir("resume-first-int");
  int st = 0;
  const SweepOptions o = stopped_sweep(d, "interrupt", st);
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
  ASSERT_EQ(WEXITSTATUS(st), 130) << "the sweep did not stop on SIGINT";
  EXPECT_FALSE(read_journal((d / "journal.jsonl").string()).torn_tail);
  expect_resumed_once(o);
  fs::remove_all(d);
}
