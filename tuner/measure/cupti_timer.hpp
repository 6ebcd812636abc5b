#pragma once
// Kernel device time from the CUPTI activity API: the sum of the durations of the kernels a
// call launched, without the launch overhead events include. libcupti is loaded with dlopen,
// so a machine without it still runs, timing with CUDA events and saying so in the meta.
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "tuner/measure/cold_timer.hpp"

namespace moe::tuner {

// An on/off switch shared by several users: on at the first acquire, off at the last release,
// never per user. `off` is given the chance to make the device idle first.
class SharedSwitch {
 public:
  SharedSwitch(std::function<void()> on, std::function<void()> off) : on_(std::move(on)), off_(std::move(off)) {}
  void acquire();
  void release();  // an unbalanced release is ignored
  int users() const;

 private:
  std::function<void()> on_, off_;
  mutable std::mutex mu_;
  int users_ = 0;
};

class CuptiKernelTimer : public KernelActivity {
 public:
  // The process's timer (CUPTI activity collection is process-wide), or nullptr with the
  // reason in `why_not` when libcupti cannot be loaded or refuses to collect.
  static CuptiKernelTimer* get(std::string* why_not);

  // Kernel activity is collected while anyone holds it (it slows every launch of the process).
  // A worker holds it for its whole life once it times with CUPTI: cuptiActivityDisable is
  // called at most once, at teardown (CUPTI 13.0 GA can deadlock in it), after the holder
  // synchronised the device, and after a forced flush (safe then: nothing is running).
  void acquire();
  void release();

  void begin() override;  // call with the device idle
  void flush() override;
  double collected_us(int* kernels) const override;
  std::size_t dropped() override;

 private:
  CuptiKernelTimer();
  SharedSwitch switch_;
};

// Whether one CUPTI sample can stand for the call: it saw every kernel the call launched
// (`launched`, 0 when unknown: then at least one) and dropped no record. `why` says otherwise.
struct CuptiVerdict {
  bool ok = true;
  std::string why;
};
CuptiVerdict judge_cupti(int seen, int launched, std::size_t dropped);

// Where libcupti is looked for, in order ($MOEBENCH_CUPTI first when set).
const char* const* cupti_library_candidates();

}  // namespace moe::tuner
