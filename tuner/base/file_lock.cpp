#include "tuner/base/file_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "moe/error.hpp"
#include "tuner/base/interrupt.hpp"

namespace moe::tuner {

namespace {

struct flock whole_file(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fl;
}

// "process 1234" when another process holds the lock, else a vaguer word (NFS may not say).
std::string holder(int fd) {
  struct flock fl = whole_file(F_WRLCK);
  if (::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0)
    return "process " + std::to_string(fl.l_pid);
  return "another process";
}

}  // namespace

DirLock::DirLock(const std::string& dir, LockWait how, const std::string& advice) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (std::filesystem::path(dir) / kFileName).string();
  // Never through a symlink: in a shared folder another user's link would have us create (or
  // lock) a file of their choosing. O_NONBLOCK: a FIFO planted there must not hang the open.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == ELOOP)
    throw Error("cannot lock " + dir + ": its lock file " + path + " is a symbolic link, which moebench does not "
                "follow (it could point anywhere): remove the link, and check who put it there");
  if (fd_ < 0) throw Error("cannot lock " + dir + " (" + path + ": " + std::strerror(errno) + "): make it writable");
  const auto fail = [&](const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    return Error(why);
  };
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))
    throw fail("cannot lock " + dir + ": its lock file " + path + " is not a regular file: remove it");
  struct flock fl = whole_file(F_WRLCK);
  if (::fcntl(fd_, F_SETLK, &fl) == 0) return;
  if (errno != EACCES && errno != EAGAIN) throw fail("cannot lock " + path + ": " + std::strerror(errno));
  const std::string who = holder(fd_);
  if (how == LockWait::refuse) throw fail(dir + " is in use by " + who + " (it holds " + path + ")" + advice);
  std::fprintf(stderr, "moebench: waiting for %s, locked by %s (another moebench writing there); Ctrl-C stops waiting\n",
               path.c_str(), who.c_str());
  std::fflush(stderr);
  while (::fcntl(fd_, F_SETLKW, &fl) != 0) {
    if (errno != EINTR) throw fail("cannot lock " + path + ": " + std::strerror(errno));
    if (interrupts().load() > 0) {
      ::close(fd_);
      fd_ = -1;
      throw StopRequested("stopped waiting for " + path + ", locked by " + who);
    }
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace moe::tuner
