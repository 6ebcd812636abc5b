// Cold-mode timing logic with a fake CUPTI: records that come back over several normal
// flushes, a round that comes up short, samples tagged by timer and never pooled across timers.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>

#include "common/rng.hpp"
#include "tuner/measure/cold_timer.hpp"
#include "tuner/measure/cupti_timer.hpp"
#include "tuner/measure/stopping.hpp"

using namespace moe::tuner;

namespace {

// Kernel records of the calls; each normal flush delivers at most `per_flush` of the pending
// ones (CUPTI hands over a buffer only once its records are complete). A call may lose some.
struct FakeCupti : KernelActivity {
  std::deque<double> pending;
  double us = 0;
  int kernels = 0, per_flush = 1, flushes = 0, begins = 0;
  std::size_t lost = 0;
  void begin() override {
    ++begins;
    us = 0;
    kernels = 0;
  }
  void flush() override {
    ++flushes;
    for (int i = 0; i < per_flush && !pending.empty(); ++i) {
      us += pending.front();
      ++kernels;
      pending.pop_front();
    }
  }
  double collected_us(int* k) const override {
    *k = kernels;
    return us;
  }
  std::size_t dropped() override { return lost; }
};

// Only the sample count ends a run: no noise target, time floor or early stop.
StopRule rule_of(int min_samples) {
  return StopRule{min_samples, 1000, std::numeric_limits<double>::infinity(), 0, 5, 0};
}

// A cold timer on a fake CUPTI that hands over `per_flush` records per flush, for a config
// whose call launches two kernels.
struct Rig {
  FakeCupti f;
  ColdTimer t{&f, ""};
  explicit Rig(int per_flush) {
    f.per_flush = per_flush;
    t.set_config(2);
  }
};

}  // namespace

TEST(ColdTimer, PollsNormalFlushesUntilEveryKernelOfTheCallCameBack) {
  FakeCupti f;
  moe::Rng rng(3);
  const double a = 3 + rng.uniform(), b = 5 + rng.uniform(), c = 7 + rng.uniform();
  f.pending = {a, b, c};
  int pauses = 0;
  const KernelTime t = collect_kernel_time(f, 3, 50, [&] { ++pauses; });
  EXPECT_EQ(t.kernels, 3);
  EXPECT_DOUBLE_EQ(t.us, a + b + c);
  EXPECT_EQ(t.flushes, 3);  // stops polling once the call's kernels are all in
  EXPECT_EQ(pauses, 2);
}

TEST(ColdTimer, PollingIsBounded) {
  FakeCupti f;
  f.pending = {4.5};  // the call launched two kernels; CUPTI only ever returns one
  const KernelTime t = collect_kernel_time(f, 2, 7);
  EXPECT_EQ(t.flushes, 7);
  EXPECT_EQ(t.kernels, 1);
  EXPECT_FALSE(judge_cupti(t.kernels, 2, t.dropped).ok);
}

TEST(ColdTimer, MoreKernelsThanTheCallLaunchedIsNoCuptiTime) {
  EXPECT_FALSE(judge_cupti(3, 2, 0).ok);
  EXPECT_TRUE(judge_cupti(2, 2, 0).ok);
}

TEST(ColdTimer, ShortRoundSwitchesTheConfigToEventsAndTagsEverySample) {
  Rig rig(2);
  FakeCupti& f = rig.f;
  ColdTimer& t = rig.t;
  moe::Rng rng(11);
  f.pending = {1.25, 2.5};
  const double ev1 = 9 + rng.uniform();
  const TimedSample s1 = t.sample([&] { return ev1; });
  EXPECT_EQ(s1.timer, "cupti");
  EXPECT_DOUBLE_EQ(s1.us, 3.75);
  f.pending = {1.5};  // one of the two records never arrives
  const double ev2 = 9 + rng.uniform();
  const TimedSample s2 = t.sample([&] { return ev2; });
  EXPECT_EQ(s2.timer, "events");
  EXPECT_DOUBLE_EQ(s2.us, ev2);
  EXPECT_NE(t.note().find("CUPTI reported 1 of the 2"), std::string::npos) << t.note();
  const int begins = f.begins;
  f.pending = {1.0, 1.0};
  EXPECT_EQ(t.sample([] { return 8.0; }).timer, "events");  // sticky for this config
  EXPECT_EQ(f.begins, begins);
  t.set_config(2);  // a new config starts on CUPTI again
  EXPECT_EQ(t.sample([] { return 8.0; }).timer, "cupti");
}

TEST(ColdTimer, AShortCuptiRoundNeverLandsInACuptiStatistic) {
  // CUPTI is whole for the first five samples, then loses a record: the measurement restarts
  // on events, and none of the CUPTI samples (all below 5 us) stays in it.
  Rig rig(3);
  moe::Rng rng(5);
  int n = 0;
  const TimedRun run = sample_one_timer(
      [&] {
        if (n++ < 5) rig.f.pending = {1 + rng.uniform(), 2 + rng.uniform()};
        else rig.f.pending = {1 + rng.uniform()};
        return rig.t.sample([&] { return 20 + rng.uniform(); });
      },
      rule_of(10), 0);
  EXPECT_EQ(run.timer, "events");
  EXPECT_TRUE(run.restarted);
  ASSERT_GE(run.samples_us.size(), 10u);
  for (double x : run.samples_us) EXPECT_GE(x, 20.0);
}

TEST(SampleOneTimer, PriorOfTheSameTimerCountsTowardTheRule) {
  const std::vector<double> prior(10, 4.0);
  int calls = 0;
  const TimedRun run = sample_one_timer([&] { return TimedSample{4.0 + 0.01 * ++calls, "cupti"}; }, rule_of(10), 0,
                                        prior, "cupti");
  EXPECT_FALSE(run.restarted);
  EXPECT_EQ(run.timer, "cupti");
  EXPECT_EQ(run.samples_us.size(), 1u);  // the ten prior samples met the minimum
}

TEST(SampleOneTimer, PriorOfAnotherTimerIsRefused) {
  const std::vector<double> prior(10, 40.0);
  moe::Rng rng(8);
  const TimedRun run = sample_one_timer([&] { return TimedSample{4.0 + rng.uniform(), "cupti"}; }, rule_of(10), 0,
                                        prior, "events");
  EXPECT_TRUE(run.restarted);
  EXPECT_EQ(run.timer, "cupti");
  EXPECT_EQ(run.samples_us.size(), 10u);  // ten of its own, none of the events prior
  for (double x : run.samples_us) EXPECT_LT(x, 5.0);
}

TEST(SampleOneTimer, UntaggedPriorIsRefused) {
  const TimedRun run = sample_one_timer([] { return TimedSample{3.0, "cupti"}; }, rule_of(4), 0, {50, 50, 50, 50}, "");
  EXPECT_TRUE(run.restarted);
  EXPECT_EQ(run.samples_us, std::vector<double>(4, 3.0));
}

TEST(ClockWarmup, RunsForTheGivenTimeBeforeTheFirstSample) {
  int calls = 0;
  EXPECT_EQ(warm_clocks([&] { return ++calls, 0.02; }, 0.15), 8);  // 8 x 20 ms >= 150 ms
  EXPECT_EQ(warm_clocks([] { return 1.0; }, 0.15), 1);            // a long call: just one
}

TEST(SharedSwitch, OnAtFirstHolderOffAtLastNeverPerUser) {
  int on = 0, off = 0;
  SharedSwitch s([&] { ++on; }, [&] { ++off; });
  s.acquire();  // the worker's own hold
  for (int point = 0; point < 3; ++point) {
    s.acquire();  // a point's bench
    s.release();
  }
  EXPECT_EQ(on, 1);
  EXPECT_EQ(off, 0);
  s.release();  // teardown
  EXPECT_EQ(off, 1);
  s.release();  // unbalanced: ignored
  EXPECT_EQ(off, 1);
  EXPECT_EQ(s.users(), 0);
}
