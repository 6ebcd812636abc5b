#include "app/command_line.hpp"

#include <fstream>

namespace moe::app {

std::vector<std::string> command_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (!args.empty()) args[0] = "moebench";
  return args;
}

}  // namespace moe::app
