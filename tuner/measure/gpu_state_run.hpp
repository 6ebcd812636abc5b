#pragma once
// Samples a candidate and reads the GPU's state around the samples. The "before" reading is
// taken right after the first sample, not before it: after idle (host reference work, a
// prepare) the clocks read low while they ramp back, and a reading then would report a
// throttle that none of the samples saw.
#include <functional>
#include <string>
#include <vector>

#include "tuner/measure/nvml.hpp"
#include "tuner/measure/stopping.hpp"

namespace moe::tuner {

struct StatedRun {
  TimedRun run;
  GpuState before, after;
};

StatedRun sample_with_gpu_state(const std::function<TimedSample()>& sample, const std::function<GpuState()>& read_state,
                                const StopRule& rule, double incumbent_us, const std::vector<double>& prior,
                                const std::string& prior_timer);

}  // namespace moe::tuner
