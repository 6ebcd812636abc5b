#pragma once
// Ctrl-C (and SIGTERM, which Slurm sends first) during a sweep: the first finishes the
// current candidate and stops, the second abandons it. A counter, read by the sweep loop and
// by the worker calls waiting on a candidate.
#include <atomic>
#include <stdexcept>

#include <signal.h>

namespace moe::tuner {

std::atomic<int>& interrupts();

// A wait that an interrupt ended (the command exits 130 with this message).
struct StopRequested : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Resets the counter and, when `active`, installs the handlers (and ignores SIGPIPE, so a
// dead worker's pipe is an error, not death) until destroyed.
class InterruptGuard {
 public:
  explicit InterruptGuard(bool active);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  bool active_;
  struct sigaction old_int_ {}, old_term_{}, old_pipe_{};
};

}  // namespace moe::tuner
