#include "tuner/base/temp_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <random>

#include "moe/error.hpp"

namespace moe::tuner {

namespace {

constexpr std::size_t kRandomChars = 12;
constexpr const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

std::string random_chars() {
  unsigned char bytes[kRandomChars];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
    else if (n < 0 && errno != EINTR) break;
  }
  if (got < sizeof bytes) {  // no getrandom (an old kernel, a seccomp filter): the library's source
    std::random_device rd;
    for (auto& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string s;
  for (unsigned char b : bytes) s += kAlphabet[b % (sizeof kAlphabet - 1)];
  return s;
}

}  // namespace

TempFile create_temp_beside(const std::string& target) {
  int err = 0;
  // A name already taken is someone else's file (or link): another name, never that one.
  for (int attempt = 0; attempt < 16; ++attempt) {
    TempFile t;
    t.path = target + ".tmp." + random_chars();
    t.fd = ::open(t.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (t.fd >= 0) return t;
    err = errno;
    if (err != EEXIST) break;
  }
  // Errors name the file the user knows; its temporary twin is an implementation detail.
  throw Error("cannot write " + target + ": " + std::strerror(err));
}

bool is_temp_name_of(const std::string& name, const std::string& base) {
  const std::string prefix = base + ".tmp.";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (std::size_t i = prefix.size(); i < name.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace moe::tuner
