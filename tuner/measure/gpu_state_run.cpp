#include "tuner/measure/gpu_state_run.hpp"

namespace moe::tuner {

StatedRun sample_with_gpu_state(const std::function<TimedSample()>& sample, const std::function<GpuState()>& read_state,
                                const StopRule& rule, double incumbent_us, const std::vector<double>& prior,
                                const std::string& prior_timer) {
  StatedRun out;
  bool read = false;
  out.run = sample_one_timer(
      [&] {
        TimedSample x = sample();
        if (!read) {
          out.before = read_state();
          read = true;
        }
        return x;
      },
      rule, incumbent_us, prior, prior_timer);
  out.after = read_state();
  return out;
}

}  // namespace moe::tuner
