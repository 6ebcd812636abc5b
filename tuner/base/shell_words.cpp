#include "tuner/base/shell_words.hpp"

#include <cctype>
#include <filesystem>

namespace moe::tuner {

std::string executable_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec || exe.empty() ? std::string("moebench") : exe.string();
}

std::string shell_quote(const std::string& a) {
  bool plain = !a.empty();
  for (char c : a) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./=,:%+@").find(c) != std::string::npos);
  if (plain) return a;
  // Inside single quotes the shell expands nothing, a newline included; a quote itself is
  // closed, escaped and reopened.
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_join(const std::vector<std::string>& args) {
  std::string r;
  for (auto& a : args) r += (r.empty() ? "" : " ") + shell_quote(a);
  return r;
}

}  // namespace moe::tuner
