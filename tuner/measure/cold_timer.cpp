#include "tuner/measure/cold_timer.hpp"

#include <algorithm>

#include "tuner/measure/cupti_timer.hpp"

namespace moe::tuner {

KernelTime collect_kernel_time(KernelActivity& a, int launched, int max_flushes, const std::function<void()>& pause) {
  KernelTime t;
  const int want = std::max(launched, 1);
  for (int i = 0; i < std::max(max_flushes, 1); ++i) {
    if (i > 0 && pause) pause();
    a.flush();
    ++t.flushes;
    t.us = a.collected_us(&t.kernels);
    if (t.kernels >= want) break;
  }
  t.dropped = a.dropped();
  return t;
}

void ColdTimer::set_config(int launched) {
  launched_ = launched;
  seen_ = 0;
  short_ = false;
  note_ = base_note_;
}

TimedSample ColdTimer::sample(const std::function<double()>& call_us) {
  if (!uses_cupti()) return {call_us(), "events"};
  cupti_->begin();
  const double event_us = call_us();
  const KernelTime k = collect_kernel_time(*cupti_, launched_, 50, pause_);
  const CuptiVerdict v = judge_cupti(k.kernels, launched_, k.dropped);
  if (v.ok) {
    seen_ = k.kernels;
    return {k.us, "cupti"};
  }
  // A sum of some of the call's kernels is no time: this config is timed with events from here.
  short_ = true;
  note_ = (base_note_.empty() ? "" : base_note_ + "; ") + v.why;
  return {event_us, "events"};
}

int warm_clocks(const std::function<double()>& call, double seconds) {
  double spent = 0;
  int n = 0;
  do {
    spent += call();
    ++n;
  } while (spent < seconds);
  return n;
}

}  // namespace moe::tuner
