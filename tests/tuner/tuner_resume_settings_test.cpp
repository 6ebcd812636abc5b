// --resume under a setting that changes what a measurement is must be refused, naming the
// setting with the journal's value and this run's: otherwise one table mixes two kinds of
// records (the cpu backend timed at 1 thread and at 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "moe/error.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/run/runner.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;


TEST(TunerResumeSettings, EverySettingThatChangesAMeasurementIsRefusedByName) {
  const fs::path d = moe::testing::fresh_temp_dir("resume-settings");
  SweepOptions o = options(d / "out", scale_problem(64), {1, 2});
  o.tables_dir.clear();
  o.threads = 1;
  run_sweep(o);
  o.resume = true;
  struct Case {
    const char* says;
    std::function<void(SweepOptions&)> change;
  };
  const Case cases[] = {
      {"threads: 1 vs 2", [](SweepOptions& x) { x.threads = 2; }},
      {"seed: 0 vs 7", [](SweepOptions& x) { x.seed = 7; }},
      {"strategy: halving vs random", [](SweepOptions& x) { x.strategy = Strategy::random; }},
      {"timer: cold vs hot", [](SweepOptions& x) { x.timer = TimerMode::hot; }},
      {"cupti: true vs false", [](SweepOptions& x) { x.cupti = false; }},
      {"dist: uniform vs zipf", [](SweepOptions& x) { x.dist = "zipf"; }},
      {"zipf_s: 1.2 vs 2", [](SweepOptions& x) { x.zipf_s = 2; }},
      {"budget_candidates: 0 vs 3", [](SweepOptions& x) { x.budget.candidates = 3; }},
      {"rule.min_samples: 5 vs 6", [](SweepOptions& x) { x.rule.min_samples = 6; }},
      {"rule.max_time_s: 0.05 vs 0.1", [](SweepOptions& x) { x.rule.max_time_s = 0.1; }},
  };
  for (const Case& c : cases) {
    SweepOptions x = o;
    c.change(x);
    const std::string msg = refusal(x);
    EXPECT_NE(msg.find("with other search settings"), std::string::npos) << c.says << ": " << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    EXPECT_NE(msg.find("--out"), std::string::npos) << msg;  // says what to do
  }
  // The same settings resume, and what only steers the run (the watchdog, the progress) may change.
  SweepOptions same = o;
  same.watchdog_s = 5;
  same.progress = ProgressMode::quiet;
  EXPECT_EQ(refusal(same), "");
  fs::remove_all(d);
}
