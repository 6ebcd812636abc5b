#include "tuner/run/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "moe/error.hpp"
#include "tuner/base/line_io.hpp"
#include "tuner/run/process_activity.hpp"

namespace moe::tuner {

namespace {

constexpr std::size_t kTailBytes = 4096;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void make_pipe(int p[2]) {
  if (::pipe2(p, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe for the worker: ") + std::strerror(errno));
}

}  // namespace

WorkerLaunch self_exec_launch() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the moebench executable to start workers: " + ec.message());
  return WorkerLaunch{{exe.string(), "worker", "--attached"}, {}};
}

WorkerProcess::~WorkerProcess() { stop(); }

void WorkerProcess::spawn() {
  int req[2], resp[2], err[2];
  make_pipe(req);
  make_pipe(resp);
  make_pipe(err);
  // Everything the child needs is made before fork: a multi-threaded parent's child may not allocate.
  std::vector<char*> args;
  for (auto& a : launch_.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  static const char exec_failed[] = "moebench: cannot exec the worker program\n";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {req[0], req[1], resp[0], resp[1], err[0], err[1]}) ::close(fd);
    throw Error(std::string("cannot start a worker process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child. Ctrl-C reaches the whole process group: the parent decides what to do with it.
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGPIPE, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const rlimit no_core{0, 0};  // a crashing candidate must not write a core dump per attempt
    ::setrlimit(RLIMIT_CORE, &no_core);
    const int a = ::fcntl(req[0], F_DUPFD, 10), b = ::fcntl(resp[1], F_DUPFD, 10), c = ::fcntl(err[1], F_DUPFD, 10);
    ::dup2(a, 0);
    ::dup2(b, 3);
    ::dup2(c, 1);
    ::dup2(c, 2);
    for (int fd : {a, b, c, req[0], req[1], resp[0], resp[1], err[0], err[1]})
      if (fd > 3) ::close(fd);
    if (launch_.in_process) ::_exit(launch_.in_process(0, 3));
    ::execv(args[0], args.data());
    ssize_t ignored = ::write(2, exec_failed, sizeof exec_failed - 1);
    (void)ignored;
    ::_exit(127);
  }
  ::close(req[0]);
  ::close(resp[1]);
  ::close(err[1]);
  pid_ = pid;
  to_ = req[1];
  from_ = resp[0];
  err_ = err[0];
  ::fcntl(from_, F_SETFL, ::fcntl(from_, F_GETFL) | O_NONBLOCK);
  ::fcntl(err_, F_SETFL, ::fcntl(err_, F_GETFL) | O_NONBLOCK);
  from_buf_.clear();
  if (spawns_++ > 0) ++restarts_;
}

std::string WorkerProcess::reap_description() {
  if (pid_ <= 0) return "worker not running";
  int st = 0;
  pid_t r;
  do r = ::waitpid(pid_, &st, 0);
  while (r < 0 && errno == EINTR);
  std::string how;
  if (r < 0) how = "worker vanished";
  else if (WIFSIGNALED(st)) how = std::string("worker killed by signal ") + std::to_string(WTERMSIG(st)) + " (" + ::strsignal(WTERMSIG(st)) + ")";
  else if (WIFEXITED(st)) how = "worker exited with status " + std::to_string(WEXITSTATUS(st));
  else how = "worker ended";
  pid_ = -1;
  close_fd(to_);
  close_fd(from_);
  close_fd(err_);
  return how;
}

bool WorkerProcess::alive() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return true;
  pid_ = -1;
  close_fd(to_);
  close_fd(from_);
  close_fd(err_);
  return false;
}

void WorkerProcess::kill_now() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  reap_description();
}

void WorkerProcess::stop() {
  if (pid_ <= 0) return;
  write_line(to_, R"({"op":"exit"})");
  close_fd(to_);
  for (int i = 0; i < 100; ++i) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      close_fd(from_);
      close_fd(err_);
      return;
    }
    ::usleep(10000);
  }
  kill_now();
}

Reply WorkerProcess::call(const json& request, double timeout_s, const std::atomic<int>* abandon, int abandon_level,
                          double idle_s) {
  using clock = std::chrono::steady_clock;
  if (!alive()) spawn();
  err_tail_.clear();
  Reply rep;
  auto tail = [&] {
    std::string t = err_tail_;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.empty() ? std::string() : ": " + t;
  };
  auto drain_err = [&] {
    char buf[4096];
    for (;;) {
      if (err_ < 0) break;
      const ssize_t n = ::read(err_, buf, sizeof buf);
      if (n == 0) close_fd(err_);  // the worker closed its stderr: stop polling it
      if (n <= 0) break;
      err_tail_.append(buf, static_cast<std::size_t>(n));
      if (err_tail_.size() > kTailBytes) err_tail_.erase(0, err_tail_.size() - kTailBytes);
    }
  };
  if (!write_line(to_, request.dump(-1, ' ', false, json::error_handler_t::replace))) {
    drain_err();
    rep.kind = Reply::crashed;
    rep.error = reap_description() + tail();
    return rep;
  }
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s);
  ProcessActivity seen = idle_s > 0 ? process_activity(pid_) : ProcessActivity{};
  auto last_life = clock::now();
  for (;;) {
    const auto nl = from_buf_.find('\n');
    if (nl != std::string::npos) {
      const std::string line = from_buf_.substr(0, nl);
      from_buf_.erase(0, nl + 1);
      drain_err();
      rep.body = parse_line(line, "worker answer");
      return rep;
    }
    const double left = std::chrono::duration<double>(deadline - clock::now()).count();
    if (left <= 0) {
      drain_err();
      kill_now();
      rep.kind = Reply::timeout;
      rep.error = "no answer within " + std::to_string(static_cast<int>(timeout_s + 0.5)) + " s (watchdog): worker killed" + tail();
      return rep;
    }
    if (abandon && abandon->load() >= abandon_level) {
      kill_now();
      rep.kind = Reply::cancelled;
      rep.error = "abandoned on interrupt";
      return rep;
    }
    pollfd fds[2] = {{from_, POLLIN, 0}, {err_, POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::min(left * 1000.0, 100.0)) + 1;
    const int n = ::poll(fds, err_ >= 0 ? 2 : 1, wait_ms);
    if (err_ < 0) fds[1].revents = 0;
    if (n < 0 && errno != EINTR) throw Error(std::string("poll on the worker pipe failed: ") + std::strerror(errno));
    if (n == 0 && idle_s > 0) {
      // Judged only on a quiet pipe: an answer already waiting in it is no reason to kill.
      const ProcessActivity now = process_activity(pid_);
      if (shows_life(seen, now)) last_life = clock::now();
      seen = now;
      if (std::chrono::duration<double>(clock::now() - last_life).count() > idle_s) {
        drain_err();
        kill_now();
        rep.kind = Reply::timeout;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", idle_s);
        rep.error = std::string("no sign of life for ") + secs +
                    " s, stopped or blocked without using the CPU (watchdog): worker killed" + tail();
        return rep;
      }
    }
    if (n <= 0) continue;
    last_life = clock::now();  // it wrote something
    if (fds[1].revents & (POLLIN | POLLHUP)) drain_err();
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t r = ::read(from_, buf, sizeof buf);
      if (r > 0) {
        from_buf_.append(buf, static_cast<std::size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        drain_err();
        rep.kind = Reply::crashed;
        rep.error = reap_description() + tail();
        return rep;
      }
    }
  }
}

}  // namespace moe::tuner
