#pragma once
// Config spaces list their allowed values as small int arrays; these check membership and
// name the set in error messages.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

namespace moe {

template <std::size_t N>
bool one_of(std::int64_t v, const int (&set)[N]) {
  return std::find(std::begin(set), std::end(set), v) != std::end(set);
}

template <std::size_t N>
std::string list(const int (&set)[N]) {
  std::string r;
  for (int v : set) r += (r.empty() ? "" : ", ") + std::to_string(v);
  return r;
}

}  // namespace moe
