#include "tuner/base/line_io.hpp"

#include <unistd.h>

#include <cerrno>

namespace moe::tuner {

bool write_line(int fd, const std::string& line) {
  std::string s = line;
  s += '\n';
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

bool LineReader::fill() {
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

bool LineReader::pop(std::string& line) {
  const auto nl = buf_.find('\n');
  if (nl == std::string::npos) return false;
  line = buf_.substr(0, nl);
  buf_.erase(0, nl + 1);
  return true;
}

bool LineReader::next(std::string& line) {
  while (!pop(line))
    if (!fill()) return false;
  return true;
}

}  // namespace moe::tuner
