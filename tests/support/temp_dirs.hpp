#pragma once
// A fresh, empty folder per test and process: tests run in parallel under ctest, so the
// process id keeps two runs of one test apart.
#include <unistd.h>

#include <filesystem>
#include <string>

namespace moe::testing {

inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("moebench-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace moe::testing
