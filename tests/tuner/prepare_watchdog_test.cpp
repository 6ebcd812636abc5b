// The watchdog while a worker prepares a point: a worker that stops (SIGSTOP) or blocks there
// is killed once it has shown no life for --watchdog, not after the long limit that a busy
// preparation of a large problem is allowed; a busy one is left to finish.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "support/temp_dirs.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/worker.hpp"
#include "tuner/run/worker_process.hpp"
#include "tuner_scale_family.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

const bool kSigpipeIgnored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

// The scale family under another name, its inputs made by `make`.
moe::FamilyDesc scale_making_inputs(const std::string& name, void (*make)()) {
  moe::FamilyDesc f = moe::testing::scale_family();
  f.name = name;
  const auto inner = f.make_inputs;
  f.make_inputs = [inner, make](const moe::Params& p, const moe::InputOptions& o, moe::TensorMap& m) {
    make();
    inner(p, o, m);
  };
  return f;
}

// Busy for a while, then done: CPU time all along.
void spin_a_while() {
  volatile double x = 1;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end) x = x * 1.0000001 + 1e-9;
}

const moe::FamilyDesc& stopping() {
  static const moe::FamilyDesc f = scale_making_inputs("scale-stops", [] { ::raise(SIGSTOP); });
  return f;
}
const moe::FamilyDesc& sleeping() {
  static const moe::FamilyDesc f = scale_making_inputs("scale-sleeps", [] {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  });
  return f;
}
const moe::FamilyDesc& spinning() {
  static const moe::FamilyDesc f = scale_making_inputs("scale-spins", spin_a_while);
  return f;
}

const FamilyResolver& families() {
  static const FamilyResolver r = [](const std::string& n) -> const moe::FamilyDesc& {
    for (const moe::FamilyDesc* f : {&stopping(), &sleeping(), &spinning()})
      if (f->name == n) return *f;
    return moe::testing::test_families()(n);
  };
  return r;
}

int worker(int in, int out) { return worker_main(in, out, families()); }

json prepare_request(const std::string& family) {
  return {{"op", "prepare"}, {"family", family}, {"backend", "cpu"}, {"threads", 1},
          {"problem", {{"tokens", 8}, {"width", 64}, {"dtype", "f32"}, {"faults", 0}, {"alpha", 1.5}}},
          {"seed", 3}};
}

}  // namespace

TEST(PrepareWatchdog, StoppedOrBlockedWorkerIsKilledAfterTheIdleLimit) {
  for (const char* family : {"scale-stops", "scale-sleeps"}) {
    WorkerProcess w(WorkerLaunch{{}, worker});
    // The long limit is far off: only the idle limit can end this call in time for the test.
    const Reply r = w.call(prepare_request(family), 3600, nullptr, 2, 0.5);
    EXPECT_EQ(r.kind, Reply::timeout) << family << ": " << r.error;
    EXPECT_NE(r.error.find("no sign of life for 0.5 s"), std::string::npos) << family << ": " << r.error;
    EXPECT_FALSE(w.running()) << family;
    // The next request gets a fresh worker.
    const Reply again = w.call(prepare_request("scale"), 3600, nullptr, 2, 0.5);
    ASSERT_EQ(again.kind, Reply::ok) << again.error;
    EXPECT_TRUE(again.body.value("ok", false)) << again.body.dump();
  }
}

TEST(PrepareWatchdog, BusyPreparationOutlastsTheIdleLimit) {
  WorkerProcess w(WorkerLaunch{{}, worker});
  // Two seconds of work, four times the idle limit: never idle, so never killed.
  const Reply r = w.call(prepare_request("scale-spins"), 3600, nullptr, 2, 0.5);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_TRUE(r.body.value("ok", false)) << r.body.dump();
}

// Through the sweep: --watchdog 1s covers the preparation (it once waited 120 s whatever the
// watchdog), and the point is recorded as failed with the reason; the other point runs.
TEST(PrepareWatchdog, SweepRecordsAStoppedPreparationAsFailedAndGoesOn) {
  const fs::path d = moe::testing::fresh_temp_dir("prepare-watchdog");
  SweepOptions o = moe::testing::sweeps::options(d, moe::testing::sweeps::scale_problem(64), {4});
  o.units.push_back({&stopping(), moe::testing::sweeps::scale_problem(64)});
  o.watchdog_s = 1;
  o.launch.in_process = worker;
  const SweepOutcome out = run_sweep(o);
  ASSERT_EQ(out.failed_points.size(), 1u);
  EXPECT_NE(out.failed_points[0].find("scale-stops"), std::string::npos) << out.failed_points[0];
  EXPECT_NE(out.failed_points[0].find("preparing the problem: no sign of life for 1 s"), std::string::npos)
      << out.failed_points[0];
  EXPECT_EQ(out.points_done, 2);
  EXPECT_GT(out.timed, 0);  // the scale point
  fs::remove_all(d);
}
