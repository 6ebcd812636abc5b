#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

#include "moe/error.hpp"
#include "tuner/run/worker.hpp"
#include "tuner/run/worker_process.hpp"
#include "tuner_scale_family.hpp"

using namespace moe::tuner;

namespace {

// A sweep ignores SIGPIPE while its workers run (InterruptGuard), so that writing to a worker
// that just died is an error the runner handles, not the end of the process; so do these tests
// (a worker that restarts after a failed sticky-error check once killed the test that way).
const bool kSigpipeIgnored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

WorkerLaunch fork_launch() {
  return WorkerLaunch{{}, [](int in, int out) { return worker_main(in, out, moe::testing::test_families()); }};
}

json prepare_request() {
  return {{"op", "prepare"}, {"family", "scale"}, {"backend", "cpu"}, {"threads", 1},
          {"problem", {{"tokens", 8}, {"width", 256}, {"dtype", "f32"}, {"faults", 1}, {"alpha", 1.5}}},
          {"seed", 5}};
}

json config(int tile, const char* behave) { return {{"tile", tile}, {"behave", behave}}; }

json measure_request(int tile, const char* behave) {
  StopRule r;
  r.min_samples = 5;
  r.min_time_s = 0;
  r.max_time_s = 0.05;
  return {{"op", "measure"}, {"config", config(tile, behave)}, {"rule", to_json(r)}, {"incumbent_us", 0}};
}

}  // namespace

TEST(TunerWorker, ServesPrepareValidateMeasure) {
  WorkerProcess w(fork_launch());
  Reply r = w.call({{"op", "probe"}, {"backend", "cpu"}}, 30);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_GT(r.body.value("copy_gbps", 0.0), 0);
  r = w.call(prepare_request(), 30);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  ASSERT_TRUE(r.body.value("ok", false)) << r.body.dump();
  EXPECT_DOUBLE_EQ(r.body.value("bytes", 0.0), 8.0 * 8 * 256);
  r = w.call({{"op", "validate"}, {"config", config(16, "normal")}, {"seed", 77}}, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
  r = w.call(measure_request(16, "normal"), 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
  EXPECT_GE(r.body["samples_us"].size(), 5u);
  EXPECT_EQ(r.body.value("timer", ""), "steady_clock");
}

TEST(TunerWorker, ReportsInvalidFailedCrashedAndTimeout) {
  WorkerProcess w(fork_launch());
  ASSERT_EQ(w.call(prepare_request(), 30).kind, Reply::ok);
  // Wrong output: invalid, with the error figures.
  Reply r = w.call({{"op", "validate"}, {"config", config(16, "wrong")}, {"seed", 1}}, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "invalid");
  EXPECT_FALSE(r.body["validation"]["ok"].get<bool>());
  EXPECT_NEAR(r.body["validation"]["checks"][0]["max_rel"].get<double>(), 0.01, 1e-3);
  // An exception: failed, the worker lives on.
  r = w.call({{"op", "validate"}, {"config", config(16, "throw")}, {"seed", 1}}, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "failed");
  EXPECT_NE(r.body.value("error", "").find("deliberate"), std::string::npos);
  const int pid = w.pid();
  // abort(): the worker dies; the reply says how.
  r = w.call({{"op", "validate"}, {"config", config(16, "abort")}, {"seed", 1}}, 30);
  EXPECT_EQ(r.kind, Reply::crashed);
  EXPECT_NE(r.error.find("signal 6"), std::string::npos) << r.error;
  // A hang: killed by the watchdog, promptly.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(w.call(prepare_request(), 30).kind, Reply::ok);  // a fresh worker
  EXPECT_NE(w.pid(), pid);
  r = w.call({{"op", "validate"}, {"config", config(16, "hang")}, {"seed", 1}}, 0.5);
  EXPECT_EQ(r.kind, Reply::timeout);
  EXPECT_NE(r.error.find("watchdog"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_FALSE(w.running());
  // The next request starts a fresh worker, which has no point prepared yet.
  r = w.call({{"op", "validate"}, {"config", config(16, "normal")}, {"seed", 1}}, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "failed");
  EXPECT_NE(r.body.value("error", "").find("no prepared point"), std::string::npos);
  EXPECT_GE(w.restarts(), 2);
}

TEST(TunerWorker, PrepareErrorsComeBackAsErrors) {
  WorkerProcess w(fork_launch());
  json req = prepare_request();
  req["family"] = "no-such-family";
  Reply r = w.call(req, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_FALSE(r.body.value("ok", true));
  EXPECT_NE(r.body.value("error", "").find("unknown kernel family"), std::string::npos) << r.body.dump();
  req = prepare_request();
  req["problem"]["width"] = 13;  // rejected by check_problem
  r = w.call(req, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_NE(r.body.value("error", "").find("unlucky"), std::string::npos);
}

TEST(TunerWorker, AbandonKillsTheWorker) {
  WorkerProcess w(fork_launch());
  ASSERT_EQ(w.call(prepare_request(), 30).kind, Reply::ok);
  std::atomic<int> interrupts{2};
  const Reply r = w.call({{"op", "validate"}, {"config", config(16, "hang")}, {"seed", 1}}, 30, &interrupts);
  EXPECT_EQ(r.kind, Reply::cancelled);
  EXPECT_FALSE(w.running());
}

TEST(TunerWorker, PriorSamplesOfAnotherTimerAreRefused) {
  WorkerProcess w(fork_launch());
  ASSERT_EQ(w.call(prepare_request(), 30).kind, Reply::ok);
  // Ten earlier samples of 1e6 us: judged on, they would hold the median far above the truth.
  const std::vector<double> prior(10, 1e6);
  json req = measure_request(16, "normal");
  req["prior_us"] = prior;
  req["prior_timer"] = "steady_clock";
  Reply r = w.call(req, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_FALSE(r.body.value("restarted", false)) << "a prior of the same timer is kept";
  req["prior_timer"] = "cupti";
  r = w.call(req, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
  EXPECT_TRUE(r.body.value("restarted", false)) << r.body.dump();
  EXPECT_EQ(r.body.value("timer", ""), "steady_clock");
  EXPECT_GE(r.body["samples_us"].size(), 5u) << "a restart meets the rule's minimum on its own samples";
}

// A cuda prepare that fails (no GPU here; a problem the family refuses on a GPU) leaves no
// bench: a measure then answers a failed status naming the missing bench, and the worker lives.
TEST(TunerWorker, MeasureWithoutABenchIsAFailureNotACrash) {
  WorkerProcess w(fork_launch());
  ASSERT_EQ(w.call(prepare_request(), 30).kind, Reply::ok);
  json req = prepare_request();
  req["backend"] = "cuda";
  req["problem"]["width"] = 13;  // rejected by check_problem where a GPU gets that far
  Reply r = w.call(req, 30);
  ASSERT_EQ(r.kind, Reply::ok);
  EXPECT_FALSE(r.body.value("ok", true)) << r.body.dump();
  r = w.call(measure_request(16, "normal"), 30);
  ASSERT_EQ(r.kind, Reply::ok) << "the worker must answer, not die";
  // "failed" where a GPU is visible; without one the worker's sticky-error check also reports
  // the missing driver and restarts ("crashed"): either way not ok, and naming the missing bench.
  EXPECT_NE(r.body.value("status", "ok"), "ok") << r.body.dump();
  EXPECT_NE(r.body.value("error", "").find("without a bench"), std::string::npos) << r.body.dump();
  EXPECT_TRUE(w.running());
}
