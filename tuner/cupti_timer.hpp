#pragma once
// Kernel device time from the CUPTI activity API: the sum of the durations of the kernels a
// call launched, without the launch overhead events include. libcupti is loaded with dlopen,
// so a machine without it still runs, timing with CUDA events and saying so in the meta.
#include <string>

namespace moe::tuner {

class CuptiKernelTimer {
 public:
  // The process's timer (CUPTI activity collection is process-wide), or nullptr with the
  // reason in `why_not` when libcupti cannot be loaded or refuses to collect.
  static CuptiKernelTimer* get(std::string* why_not);

  // Discards what was collected so far; call with the device idle.
  void begin();
  // Call after synchronising: the summed duration (us) of the kernels since begin() and
  // their count in `kernels` (0 kernels: the caller falls back to events).
  double end(int* kernels);

 private:
  CuptiKernelTimer() = default;
};

// Where libcupti is looked for, in order ($MOEBENCH_CUPTI first when set).
const char* const* cupti_library_candidates();

}  // namespace moe::tuner
