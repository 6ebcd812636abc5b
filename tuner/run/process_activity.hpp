#pragma once
// Whether a process is doing anything, read from /proc: what the watchdog of a long request
// (preparing a point) goes by. A fixed time limit there would either wait minutes on a stopped
// or deadlocked worker, or kill one still busy building a large problem.
#include <sys/types.h>

#include <string>

namespace moe::tuner {

struct ProcessActivity {
  long long cpu_ticks = -1;  // user + system time of all its threads, in clock ticks; -1: unknown
  // A thread is running or waiting for a CPU (a busy machine), or in a disk wait, or the process
  // has ended (its pipe says how) or cannot be read: nothing to hold against it.
  bool busy = true;
};

ProcessActivity process_activity(pid_t pid);

// A /proc file's text; empty when it cannot be opened or read. A process that exits between the
// open and the read fails the read (ESRCH), and a reading of a dead worker is no error.
std::string read_proc_text(const std::string& path);

// Activity between two readings: its CPU time grew, or it was busy at the second.
inline bool shows_life(const ProcessActivity& before, const ProcessActivity& now) {
  return now.busy || now.cpu_ticks != before.cpu_ticks;
}

}  // namespace moe::tuner
