#pragma once
// Running a user-facing command as a user does, for the scripts' tests: exit code and output.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace moe::testing {

struct Proc {
  int code = -1;
  std::string out;  // stdout and stderr
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::string quote(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

inline Proc sh(const std::string& cmd) {
  const auto log = std::filesystem::temp_directory_path() / ("moebench-sh-" + std::to_string(::getpid()) + ".log");
  const int st = std::system((cmd + " > " + quote(log) + " 2>&1").c_str());
  Proc r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(log);
  std::filesystem::remove(log);
  return r;
}

}  // namespace moe::testing
