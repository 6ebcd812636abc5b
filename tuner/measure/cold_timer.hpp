#pragma once
// The host logic of cold-mode timing, apart from CUDA so it is tested with a fake CUPTI:
// collecting a call's kernel records with bounded normal flushes, and choosing per sample
// between CUPTI's kernel-only time and the events' time, with the sample tagged by its timer.
#include <cstddef>
#include <functional>
#include <string>

#include "tuner/measure/stopping.hpp"

namespace moe::tuner {

// The CUPTI kernel-activity buffer as the timing code sees it (CuptiKernelTimer; a fake in tests).
class KernelActivity {
 public:
  virtual ~KernelActivity() = default;
  virtual void begin() = 0;  // forget what was collected (device idle)
  // A normal flush: delivers the buffers whose records are complete. Never forced while
  // timing: a forced flush straight after the sync delivers unfinished records (end = 0),
  // which are skipped and never delivered again.
  virtual void flush() = 0;
  virtual double collected_us(int* kernels) const = 0;  // summed since begin()
  virtual std::size_t dropped() = 0;                     // records CUPTI lost
};

struct KernelTime {
  double us = 0;
  int kernels = 0;
  std::size_t dropped = 0;
  int flushes = 0;
};

// Flushes normally until `launched` kernels (at least one) came back, at most `max_flushes`
// times, calling `pause` between tries.
KernelTime collect_kernel_time(KernelActivity& a, int launched, int max_flushes = 50,
                               const std::function<void()>& pause = {});

// One config's cold timer: CUPTI while it sees every kernel of the call; once it comes up short
// (or drops records), events for the rest of this config, and the sample says so.
class ColdTimer {
 public:
  ColdTimer(KernelActivity* cupti, std::string base_note, std::function<void()> pause = {})
      : cupti_(cupti), base_note_(std::move(base_note)), pause_(std::move(pause)) {}
  void set_config(int launched);
  bool uses_cupti() const { return cupti_ && !short_; }
  // `call_us` runs one call between CUDA events and returns their time.
  TimedSample sample(const std::function<double()>& call_us);
  const std::string& note() const { return note_; }
  int kernels_seen() const { return seen_; }

 private:
  KernelActivity* cupti_;
  std::string base_note_, note_;
  std::function<void()> pause_;
  int launched_ = 0, seen_ = 0;
  bool short_ = false;
};

// Runs `call` (one call, returning its wall time in seconds) until `seconds` have passed, so
// the clocks have ramped up before a point's first sample; at least one call. Returns the count.
int warm_clocks(const std::function<double()>& call, double seconds);

}  // namespace moe::tuner
