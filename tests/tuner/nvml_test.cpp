// NVML is optional: without it a reading says why and nothing fails; nvbench's 75% rule flags
// throttled readings.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tuner/measure/nvml.hpp"

using namespace moe::tuner;

TEST(Nvml, AbsentIsANoteNotAnError) {
  // Only the named library is tried when MOEBENCH_NVML is set; this one does not exist.
  ::setenv("MOEBENCH_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
  const GpuState s = read_gpu_state("0000:00:00.0");
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.why_not.find("NVML not found"), std::string::npos) << s.why_not;
  EXPECT_NE(s.why_not.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << s.why_not;
  EXPECT_EQ(to_json(s)["ok"], false);
  EXPECT_EQ(throttle_note(s, s), "");
}

TEST(Nvml, BelowThreeQuartersOfTheDefaultClockIsThrottled) {
  GpuState fine;
  fine.ok = true;
  fine.sm_mhz = 1980;
  fine.default_sm_mhz = 1980;
  GpuState slow = fine;
  slow.sm_mhz = 1400;  // 70.7%
  GpuState edge = fine;
  edge.sm_mhz = 1485;  // exactly 75%: not below
  EXPECT_EQ(throttle_note(fine, fine), "");
  EXPECT_EQ(throttle_note(edge, fine), "");
  const std::string n = throttle_note(fine, slow);
  EXPECT_NE(n.find("1400 MHz after the samples"), std::string::npos) << n;
  EXPECT_NE(n.find("default 1980 MHz"), std::string::npos) << n;
}
