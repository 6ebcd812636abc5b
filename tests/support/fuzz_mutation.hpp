#pragma once
// The fuzz tests' mutations of a valid input (a file's text or a flag's value).
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace moe::testing {

// One random change to `s`: a flipped, inserted or deleted byte, a cut, a repeated range, a
// value of another type, or a deep nesting around it all.
inline void mutate(std::string& s, std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  static const char bytes[] = {'\0', '\xff', '\xc3', '[', '{', '"', '}', ']', ',', ':', '-', '9', 'e', '\n', '\\', ' '};
  static const char* values[] = {"[]",   "{}",   "null", "\"x\"",    "-5",   "1e308", "99999999999999999999",
                                 "true", "[[[[", "0.5",  "\"\xff\"", "-0",   "1e-400", "\"12abc\""};
  switch (pick(8)) {
    case 0:
      if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
      break;
    case 1: s.insert(pick(s.size() + 1), 1, bytes[pick(sizeof bytes)]); break;
    case 2: {
      const std::size_t b = pick(s.size() + 1);
      s.erase(b, pick(16) + 1);
      break;
    }
    case 3: s.resize(pick(s.size() + 1)); break;
    case 4: {
      const std::size_t b = pick(s.size() + 1), n = pick(32) + 1;
      s.insert(b, s.substr(b, n));
      break;
    }
    case 5:
    case 6: {
      // The value after a random ':' becomes one of another type.
      std::vector<std::size_t> colons;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] == ':') colons.push_back(i);
      if (colons.empty()) break;
      const std::size_t at = colons[pick(colons.size())] + 1;
      std::size_t end = at;
      while (end < s.size() && s[end] != ',' && s[end] != '}' && s[end] != '\n') ++end;
      s.replace(at, end - at, values[pick(std::size(values))]);
      break;
    }
    default: {
      const std::size_t n = 100 + pick(400);
      s = std::string(n, '[') + s + std::string(n, ']');
    }
  }
}

}  // namespace moe::testing
