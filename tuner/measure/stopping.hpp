#pragma once
// When to stop sampling a candidate: at least `min_samples` and `min_time_s` of measured time,
// then as soon as the median's noise is below `max_noise`; never past `max_time_s` of wall
// time (the per-candidate time-out). A candidate whose median is already more than
// `early_stop_ratio` times the incumbent's after the minimum samples stops early.
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/measure/stats.hpp"

namespace moe::tuner {

struct StopRule {
  int min_samples = 10;
  int max_samples = 10000;
  double max_noise = 0.01;  // Stats::noise; infinity: stop once the minimums are met
  double min_time_s = 0.01;  // sum of the samples
  double max_time_s = 2.0;  // wall time of this measurement
  double early_stop_ratio = 2.0;  // <= 0: never
};

enum class StopReason { none, converged, max_time, max_samples, early_stop };
std::string_view stop_reason_name(StopReason r);  // "", "converged", "max_time", "max_samples", "early_stop"

// `st` summarises every sample so far (earlier rounds included); `incumbent_us` is the best
// median known for this point, 0 when none.
StopReason check_stop(const StopRule& rule, const Stats& st, double measured_s, double elapsed_s,
                      double incumbent_us);

struct SampleRun {
  std::vector<double> samples_us;  // the new samples only
  StopReason reason = StopReason::none;
  double elapsed_s = 0;
};

// Calls `sample` (one timing in microseconds) until the rule says stop, judging on `prior`
// samples plus the new ones. Takes at least one sample. Re-summarises on a geometric
// schedule, so long runs of fast samples stay cheap.
SampleRun sample_until(const std::function<double()>& sample, const StopRule& rule, double incumbent_us,
                       const std::vector<double>& prior = {});

// One sample and the timer that took it ("cupti", "events", "graph", "steady_clock", ...).
struct TimedSample {
  double us = 0;
  std::string timer;
};

struct TimedRun : SampleRun {
  std::string timer;       // what timed every sample of samples_us
  bool restarted = false;  // the candidate's earlier samples (prior included) are void
};

// sample_until for samples that name their timer: a statistic never pools two timers. `prior`
// (taken by `prior_timer`) is judged on only while the new samples carry the same timer; at
// the first sample of another timer, everything before it is dropped and the run starts over
// with that timer, its wall-time limit reduced by what was spent.
TimedRun sample_one_timer(const std::function<TimedSample()>& sample, const StopRule& rule, double incumbent_us,
                          const std::vector<double>& prior = {}, const std::string& prior_timer = "");

}  // namespace moe::tuner
