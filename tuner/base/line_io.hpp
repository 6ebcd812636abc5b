#pragma once
// Newline-delimited messages over file descriptors (the worker pipes).
#include <string>

namespace moe::tuner {

// Writes `line` and a newline, retrying short writes and EINTR; false when the peer is gone.
bool write_line(int fd, const std::string& line);

class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // Blocks for the next line (without its newline); false at EOF or on an error.
  bool next(std::string& line);
  // Appends what is readable now; false at EOF. For poll()-driven readers.
  bool fill();
  // Pops a complete line buffered by fill().
  bool pop(std::string& line);
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string buf_;
};

}  // namespace moe::tuner
