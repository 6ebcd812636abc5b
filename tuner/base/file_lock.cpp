#include "tuner/base/file_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "moe/error.hpp"

namespace moe::tuner {

DirLock::DirLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (std::filesystem::path(dir) / kFileName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot lock " + dir + " (" + path + ": " + std::strerror(errno) + "): make it writable");
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  while (::fcntl(fd_, F_SETLKW, &fl) != 0) {
    if (errno == EINTR) continue;
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw Error("cannot lock " + path + ": " + why);
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace moe::tuner
