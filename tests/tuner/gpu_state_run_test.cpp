// The GPU state around a candidate's samples: the "before" reading comes after the first sample
// (clocks ramping after idle must not read as a throttle), the "after" one after the last.
#include <gtest/gtest.h>

#include <string>

#include "tuner/measure/gpu_state_run.hpp"

using namespace moe::tuner;

TEST(GpuStateRun, BeforeIsReadAfterTheFirstSampleAndAfterAfterTheLast) {
  std::string events;
  int samples = 0;
  // The clock the fake reports ramps with every sample taken: 1000 MHz while idle, 1980 after.
  auto sample = [&] {
    events += 's';
    ++samples;
    return TimedSample{12.5 + 0.01 * (samples % 3), "events"};
  };
  auto read = [&] {
    events += 'r';
    GpuState g;
    g.ok = true;
    g.default_sm_mhz = 1980;
    g.sm_mhz = samples == 0 ? 1000 : 1980;
    return g;
  };
  StopRule rule;
  rule.min_samples = 5;
  rule.max_samples = 5;
  rule.min_time_s = 0;
  const StatedRun r = sample_with_gpu_state(sample, read, rule, 0, {}, "");
  EXPECT_EQ(events, "srssssr");
  EXPECT_EQ(r.run.samples_us.size(), 5u);
  EXPECT_EQ(r.run.timer, "events");
  EXPECT_EQ(r.before.sm_mhz, 1980u);
  EXPECT_EQ(throttle_note(r.before, r.after), "") << "a reading taken while idle reports a false throttle";
}
