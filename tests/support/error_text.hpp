#pragma once
// The message of the moe::Error a call throws, "" when it throws none: tests assert on what
// the user is told, not only that something was refused.
#include <functional>
#include <string>

#include "moe/error.hpp"

namespace moe::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const moe::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace moe::testing
