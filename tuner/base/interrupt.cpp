#include "tuner/base/interrupt.hpp"

#include <unistd.h>

namespace moe::tuner {

namespace {

std::atomic<int> g_interrupts{0};

extern "C" void on_interrupt(int) {
  static const char first[] = "\nmoebench: interrupted: finishing the current candidate (interrupt again to abandon it)\n";
  static const char second[] = "\nmoebench: abandoning the current candidate\n";
  const int n = g_interrupts.fetch_add(1) + 1;
  ssize_t ignored = n == 1 ? ::write(2, first, sizeof first - 1) : n == 2 ? ::write(2, second, sizeof second - 1) : 0;
  (void)ignored;
}

}  // namespace

std::atomic<int>& interrupts() { return g_interrupts; }

InterruptGuard::InterruptGuard(bool active) : active_(active) {
  g_interrupts = 0;
  if (!active_) return;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll wakes up
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old_pipe_);
}

InterruptGuard::~InterruptGuard() {
  if (!active_) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGPIPE, &old_pipe_, nullptr);
}

}  // namespace moe::tuner
