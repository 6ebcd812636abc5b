#include <gtest/gtest.h>

#include <cmath>

#include "common/rng.hpp"
#include "tuner/measure/stats.hpp"
#include "tuner/measure/stopping.hpp"

using namespace moe::tuner;

TEST(TunerStats, KnownSamples) {
  // 1..9 shuffled: quantiles by linear interpolation (type 7).
  const Stats s = summarize({5, 3, 9, 1, 7, 2, 8, 4, 6});
  EXPECT_EQ(s.n, 9);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 9);
  EXPECT_DOUBLE_EQ(s.median_us, 5);
  EXPECT_DOUBLE_EQ(s.q1_us, 3);
  EXPECT_DOUBLE_EQ(s.q3_us, 7);
  EXPECT_DOUBLE_EQ(s.mean_us, 5);
  EXPECT_NEAR(s.stdev_us, std::sqrt(7.5), 1e-12);  // sample stdev of 1..9
  EXPECT_NEAR(s.noise, 1.57 * 4 / 3 / 5, 1e-12);
}

TEST(TunerStats, EvenCountInterpolates) {
  const Stats s = summarize({10, 20, 30, 40});
  EXPECT_DOUBLE_EQ(s.median_us, 25);
  EXPECT_DOUBLE_EQ(s.q1_us, 17.5);
  EXPECT_DOUBLE_EQ(s.q3_us, 32.5);
}

TEST(TunerStats, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).n, 0);
  const Stats one = summarize({3.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.median_us, 3.5);
  EXPECT_DOUBLE_EQ(one.stdev_us, 0);
  EXPECT_DOUBLE_EQ(one.noise, 0);
}

TEST(TunerStats, NoiseShrinksWithSamples) {
  moe::Rng rng(3);
  std::vector<double> v;
  for (int i = 0; i < 20; ++i) v.push_back(100 + rng.normal());
  const double n20 = summarize(v).noise;
  for (int i = 0; i < 2000; ++i) v.push_back(100 + rng.normal());
  EXPECT_LT(summarize(v).noise, n20 / 5);
}

TEST(TunerStats, WithinNoise) {
  std::vector<double> a, b, c;
  moe::Rng rng(11);
  for (int i = 0; i < 50; ++i) {
    a.push_back(100 + rng.normal());
    b.push_back(100.5 + rng.normal());
    c.push_back(150 + rng.normal());
  }
  EXPECT_TRUE(within_noise(summarize(a), summarize(b), 0.0));
  EXPECT_FALSE(within_noise(summarize(a), summarize(c), 0.01));
  // The floor alone makes two tight but slightly different medians equal.
  EXPECT_TRUE(within_noise(summarize({100, 100, 100}), summarize({100.5, 100.5, 100.5}), 0.01));
  EXPECT_FALSE(within_noise(summarize({100, 100, 100}), summarize({100.5, 100.5, 100.5}), 0.001));
}

TEST(TunerStopping, NeedsMinimumSamplesAndTime) {
  StopRule r;
  r.min_samples = 10;
  r.min_time_s = 1e-3;
  r.max_noise = 0.01;
  const Stats tight = summarize(std::vector<double>(10, 200.0));
  EXPECT_EQ(check_stop(r, summarize(std::vector<double>(9, 200.0)), 1, 0, 0), StopReason::none);
  EXPECT_EQ(check_stop(r, tight, 0.5e-3, 0, 0), StopReason::none);  // not enough measured time
  EXPECT_EQ(check_stop(r, tight, 2e-3, 0, 0), StopReason::converged);
}

TEST(TunerStopping, NoisyRunsUntilTimeout) {
  StopRule r;
  r.min_samples = 5;
  r.min_time_s = 0;
  r.max_time_s = 0.5;
  const Stats noisy = summarize({1, 10, 2, 9, 3, 8, 4, 7});
  EXPECT_EQ(check_stop(r, noisy, 1, 0.1, 0), StopReason::none);
  EXPECT_EQ(check_stop(r, noisy, 1, 0.6, 0), StopReason::max_time);
  r.max_samples = 8;
  EXPECT_EQ(check_stop(r, noisy, 1, 0.1, 0), StopReason::max_samples);
}

TEST(TunerStopping, EarlyStopTwiceAsSlowAsIncumbent) {
  StopRule r;
  r.min_samples = 4;
  const Stats slow = summarize({21, 22, 21, 23});
  EXPECT_EQ(check_stop(r, slow, 1, 0, 10.0), StopReason::early_stop);
  EXPECT_NE(check_stop(r, slow, 1, 0, 11.0), StopReason::early_stop);  // 1.9x: keeps going
  EXPECT_EQ(check_stop(r, summarize({21, 22, 21}), 1, 0, 10.0), StopReason::none);  // before the minimum
  r.early_stop_ratio = 0;
  EXPECT_NE(check_stop(r, slow, 1, 0, 10.0), StopReason::early_stop);
}

TEST(TunerStopping, SampleUntilConvergesOnSteadyInput) {
  StopRule r;
  r.min_samples = 10;
  r.min_time_s = 0;
  r.max_noise = 0.01;
  int calls = 0;
  const SampleRun run = sample_until([&] { return 50.0 + (++calls % 2) * 0.01; }, r, 0);
  EXPECT_EQ(run.reason, StopReason::converged);
  EXPECT_EQ(run.samples_us.size(), 10u);
}

TEST(TunerStopping, SampleUntilCountsPriorSamples) {
  StopRule r;
  r.min_samples = 30;
  r.min_time_s = 0;
  r.max_noise = INFINITY;
  const std::vector<double> prior(10, 5.0);
  const SampleRun run = sample_until([] { return 5.0; }, r, 0, prior);
  EXPECT_EQ(run.samples_us.size(), 20u);
}

TEST(TunerStopping, SampleUntilEarlyStops) {
  StopRule r;
  r.min_samples = 10;
  r.min_time_s = 0;
  const SampleRun run = sample_until([] { return 30.0; }, r, 10.0);
  EXPECT_EQ(run.reason, StopReason::early_stop);
  EXPECT_EQ(run.samples_us.size(), 10u);
}

TEST(TunerStopping, SampleUntilTimesOut) {
  StopRule r;
  r.min_samples = 5;
  r.min_time_s = 0;
  r.max_time_s = 0.05;
  moe::Rng rng(5);
  const SampleRun run = sample_until(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(200)) {
        }
        return 1 + 100 * rng.uniform();  // far too noisy to converge
      },
      r, 0);
  EXPECT_EQ(run.reason, StopReason::max_time);
  EXPECT_GE(run.elapsed_s, 0.05);
  EXPECT_LT(run.elapsed_s, 1.0);
}
