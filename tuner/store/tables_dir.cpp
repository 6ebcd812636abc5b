#include "tuner/store/tables_dir.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "moe/error.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

std::string default_tables_dir() {
  if (const char* env = std::getenv("MOEBENCH_CONFIG_DIR"); env && *env) {
    const std::string s = env;
    const std::string first = s.substr(0, s.find(':'));
    if (!first.empty()) return first;
  }
  return "configs";
}

void check_writable_dir(const std::string& dir, const std::string& flag, const std::string& advice) {
  const auto fail = [&](const std::string& why) { return Error(flag + " " + dir + ": " + why + ": " + advice); };
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw fail("exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw fail("cannot create it (" + ec.message() + ")");
  // access(W_OK) is not the answer on read-only mounts with root, or on NFS: create a file.
  std::string probe = (fs::path(dir) / ".moebench-write-test.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) throw fail(std::string("cannot write there (") + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_tables_dir(const std::string& dir, const std::string& flag) {
  check_writable_dir(dir, flag, "give a writable directory, or --tables none to write no tables");
}

}  // namespace moe::tuner
