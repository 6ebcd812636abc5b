#pragma once
// An exclusive lock held across a read-modify-write of shared files (config tables that several
// sweeps, or the shards of one job array, write at once), or for a whole sweep on its --out. A
// POSIX record lock on a hidden file in the directory: released by the kernel when the process
// dies, and honoured over NFS, where the tables of a cluster job usually live.
#include <string>

namespace moe::tuner {

enum class LockWait {
  wait,    // say who holds it, then wait; an interrupt (Ctrl-C) stops the wait (StopRequested)
  refuse,  // throw moe::Error naming the holder, followed by `advice`
};

class DirLock {
 public:
  // Locks `dir` (created if missing); throws moe::Error when it cannot be.
  explicit DirLock(const std::string& dir, LockWait how = LockWait::wait, const std::string& advice = "");
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  static constexpr const char* kFileName = ".moebench.lock";

 private:
  int fd_ = -1;
};

}  // namespace moe::tuner
