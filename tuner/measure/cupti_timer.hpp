#pragma once
// Kernel device time from the CUPTI activity API: the sum of the durations of the kernels a
// call launched, without the launch overhead events include. libcupti is loaded with dlopen,
// so a machine without it still runs, timing with CUDA events and saying so in the meta.
#include <cstddef>
#include <string>

namespace moe::tuner {

class CuptiKernelTimer {
 public:
  // The process's timer (CUPTI activity collection is process-wide), or nullptr with the
  // reason in `why_not` when libcupti cannot be loaded or refuses to collect.
  static CuptiKernelTimer* get(std::string* why_not);

  // Kernel activity is collected only between enable() and disable() (a bench's lifetime):
  // it slows every launch of the process while on.
  void enable();
  void disable();
  // Discards what was collected so far; call with the device idle.
  void begin();
  // Call after synchronising: the summed duration (us) of the kernels since begin(), their
  // count in `kernels` and the records CUPTI says it dropped in `dropped`. A caller that knows
  // how many kernels it launched falls back to events when fewer came back or any dropped.
  double end(int* kernels, std::size_t* dropped = nullptr);

 private:
  CuptiKernelTimer() = default;
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
