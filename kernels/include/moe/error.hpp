#pragma once
// One exception type for every user-facing failure. Messages say what is wrong and,
// where there is one, what to do about it; the CLI prints them on one line.
#include <stdexcept>
#include <string>

namespace moe {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace moe
