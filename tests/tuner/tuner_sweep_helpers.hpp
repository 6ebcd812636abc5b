#pragma once
// What the runner's tests share: a sweep of the test-only scale family with quick settings,
// run in a forked child so it can be killed, and checks on the journal it leaves.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "moe/error.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/worker.hpp"
#include "tuner/store/journal.hpp"
#include "tuner_scale_family.hpp"

namespace moe::testing::sweeps {

using moe::tuner::json;
using moe::tuner::JournalContents;
using moe::tuner::SweepOptions;

inline moe::Params scale_problem(std::int64_t width, std::int64_t faults = 0) {
  return moe::complete(moe::testing::scale_family().problem_params, moe::Params{{"width", width}, {"faults", faults}},
                       "scale");
}

inline SweepOptions options(const std::filesystem::path& out, const moe::Params& problem, std::vector<std::int64_t> tokens) {
  SweepOptions o;
  o.units = {{&moe::testing::scale_family(), problem}};
  o.tokens = std::move(tokens);
  o.backend = moe::Backend::cpu;
  o.threads = 1;
  o.out_dir = out.string();
  o.tables_dir = (out / "tables").string();
  o.rule.min_samples = 5;
  o.rule.min_time_s = 1e-3;
  o.rule.max_time_s = 0.05;
  o.watchdog_s = 2;
  o.launch.in_process = [](int in, int outfd) { return moe::tuner::worker_main(in, outfd, moe::testing::test_families()); };
  o.progress = moe::tuner::ProgressMode::quiet;
  o.handle_signals = false;
  o.command = "moebench sweep scale (test)";
  return o;
}

// What a sweep that must be refused says ("" when it runs).
inline std::string refusal(const SweepOptions& o) {
  try {
    moe::tuner::run_sweep(o);
  } catch (const moe::Error& e) {
    return e.what();
  }
  return "";
}

inline int count_type(const JournalContents& j, const std::string& type) {
  int n = 0;
  for (auto& l : j.lines) n += l.value("type", "") == type;
  return n;
}

// Every line of a journal exactly once: evals by (point, config, round), others by point.
inline void expect_unique_lines(const JournalContents& j) {
  std::set<std::string> seen;
  for (auto& l : j.lines) {
    std::string k = l.value("type", "") + "|" + l.value("point", "");
    if (l.value("type", "") == "eval") k += "|" + l.value("config_key", "") + "|" + std::to_string(l.value("round", -1));
    EXPECT_TRUE(seen.insert(k).second) << "repeated journal record " << k;
  }
}

// Runs the sweep in a forked child (so it can be killed) and returns its pid.
inline pid_t sweep_in_child(const SweepOptions& o) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 0;
    try {
      rc = moe::tuner::run_sweep(o).interrupted ? 130 : 0;
    } catch (...) {
      rc = 2;
    }
    ::_exit(rc);
  }
  return pid;
}

}  // namespace moe::testing::sweeps
