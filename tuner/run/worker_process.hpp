#pragma once
// The parent's handle on one worker process: spawns it (exec of `moebench worker`, or a
// plain fork running a function, which tests use), sends requests, and enforces the
// watchdog. A worker that dies or overstays is killed and respawned on the next request.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

struct WorkerLaunch {
  // exec mode: the program and arguments; the worker reads requests on fd 0 and answers on fd 3.
  std::vector<std::string> argv;
  // fork mode (when set): runs in the forked child as worker(in_fd, out_fd); its return is the exit status.
  std::function<int(int, int)> in_process;
};

// `moebench worker` of the running executable.
WorkerLaunch self_exec_launch();

struct Reply {
  enum Kind { ok, crashed, timeout, cancelled } kind = ok;
  json body;          // the worker's answer when kind == ok
  std::string error;  // what happened otherwise, with the tail of the worker's stderr
};

class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerLaunch launch) : launch_(std::move(launch)) {}
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends `request` and waits up to `timeout_s` for the answer. `abandon`, when it becomes
  // true, ends the wait early (the worker is killed). A dead worker is restarted first.
  // idle_s > 0: a worker that shows no life (process_activity.hpp) for that long, one stopped
  // or blocked, is killed before `timeout_s` (which then bounds only a busy one).
  Reply call(const json& request, double timeout_s, const std::atomic<int>* abandon = nullptr,
             int abandon_level = 2, double idle_s = 0);
  bool running() const { return pid_ > 0; }
  // Reaps a worker that has exited on its own; true while it lives.
  bool alive();
  void kill() { kill_now(); }
  int pid() const { return pid_; }
  int restarts() const { return restarts_; }
  void stop();  // asks it to exit, then kills it if it does not

 private:
  void spawn();
  void kill_now();
  std::string reap_description();  // how the dead worker ended
  WorkerLaunch launch_;
  int pid_ = -1, to_ = -1, from_ = -1, err_ = -1;
  int restarts_ = 0, spawns_ = 0;
  std::string from_buf_, err_tail_;
};

}  // namespace moe::tuner
