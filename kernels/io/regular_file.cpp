#include "io/regular_file.hpp"

#include <sys/stat.h>

namespace moe::io {

std::string not_a_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "is a directory, not a file";
  return "is a FIFO, socket or device, not a regular file";
}

}  // namespace moe::io
