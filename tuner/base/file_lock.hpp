#pragma once
// An exclusive lock held across a read-modify-write of shared files (config tables that several
// sweeps, or the shards of one job array, write at once). A POSIX record lock on a hidden file in
// the directory: released by the kernel when the process dies, and honoured over NFS, where the
// tables of a cluster job usually live.
#include <string>

namespace moe::tuner {

class DirLock {
 public:
  // Blocks until `dir` (created if missing) is locked; throws moe::Error when it cannot be.
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  static constexpr const char* kFileName = ".moebench.lock";

 private:
  int fd_ = -1;
};

}  // namespace moe::tuner
