#include "app/command_line.hpp"

#include <cctype>
#include <fstream>

namespace moe::app {

std::vector<std::string> command_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (!args.empty()) args[0] = "moebench";
  return args;
}

std::string shell_join(const std::vector<std::string>& args) {
  std::string r;
  for (auto& a : args) {
    bool plain = !a.empty();
    for (char c : a) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./=,:%+@").find(c) != std::string::npos);
    r += (r.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return r;
}

}  // namespace moe::app
