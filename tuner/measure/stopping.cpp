#include "tuner/measure/stopping.hpp"

#include <algorithm>
#include <chrono>

namespace moe::tuner {

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::converged: return "converged";
    case StopReason::max_time: return "max_time";
    case StopReason::max_samples: return "max_samples";
    case StopReason::early_stop: return "early_stop";
    default: return "";
  }
}

StopReason check_stop(const StopRule& rule, const Stats& st, double measured_s, double elapsed_s,
                      double incumbent_us) {
  if (st.n >= rule.max_samples) return StopReason::max_samples;
  if (elapsed_s >= rule.max_time_s && st.n >= 1) return StopReason::max_time;
  if (st.n < rule.min_samples) return StopReason::none;
  if (rule.early_stop_ratio > 0 && incumbent_us > 0 && st.median_us > rule.early_stop_ratio * incumbent_us)
    return StopReason::early_stop;
  if (measured_s < rule.min_time_s) return StopReason::none;
  return st.noise <= rule.max_noise ? StopReason::converged : StopReason::none;
}

SampleRun sample_until(const std::function<double()>& sample, const StopRule& rule, double incumbent_us,
                       const std::vector<double>& prior) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  SampleRun r;
  std::vector<double> all = prior;
  double measured_s = 0;
  for (double x : prior) measured_s += x * 1e-6;
  std::size_t next_check = 0;
  Stats st = summarize(all);
  for (;;) {
    const double us = sample();
    r.samples_us.push_back(us);
    all.push_back(us);
    measured_s += us * 1e-6;
    const double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    const bool minimums = static_cast<int>(all.size()) <= 2 * rule.min_samples;
    if (minimums || all.size() >= next_check || elapsed >= rule.max_time_s ||
        static_cast<int>(all.size()) >= rule.max_samples) {
      st = summarize(all);
      next_check = all.size() + all.size() / 16 + 1;
      r.reason = check_stop(rule, st, measured_s, elapsed, incumbent_us);
      if (r.reason != StopReason::none) {
        r.elapsed_s = elapsed;
        return r;
      }
    }
  }
}

namespace {
struct TimerSwitched {
  TimedSample first;  // the first sample of the new timer
};
}  // namespace

TimedRun sample_one_timer(const std::function<TimedSample()>& sample, const StopRule& rule, double incumbent_us,
                          const std::vector<double>& prior, const std::string& prior_timer) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  TimedRun out;
  // An untagged prior is of no known timer: it cannot be pooled with anything.
  std::string timer = prior.empty() ? "" : prior_timer;
  std::vector<double> before = timer.empty() ? std::vector<double>{} : prior;
  if (!prior.empty() && timer.empty()) out.restarted = true;
  std::vector<double> mine;  // this measurement's samples of `timer` taken before a restart
  StopRule r = rule;
  for (;;) {
    try {
      const SampleRun run = sample_until(
          [&] {
            TimedSample s = sample();
            if (timer.empty()) timer = s.timer;
            if (s.timer != timer) throw TimerSwitched{std::move(s)};
            return s.us;
          },
          r, incumbent_us, before);
      out.samples_us = mine;
      out.samples_us.insert(out.samples_us.end(), run.samples_us.begin(), run.samples_us.end());
      out.reason = run.reason;
      out.elapsed_s = std::chrono::duration<double>(clock::now() - t0).count();
      out.timer = timer;
      return out;
    } catch (const TimerSwitched& sw) {
      out.restarted = true;
      timer = sw.first.timer;
      mine = {sw.first.us};
      before = mine;
      r.max_time_s = std::max(0.0, rule.max_time_s - std::chrono::duration<double>(clock::now() - t0).count());
    }
  }
}

}  // namespace moe::tuner
