#include "runtime/build_id.hpp"

#include <cstring>

namespace moe::runtime {

namespace {

struct Id {
  const char* family;
  const char* id;
};
constexpr Id kIds[] = {
#include "moe_build_ids.inc"
};

}  // namespace

std::string family_build_id(const std::string& family) {
  for (const Id& i : kIds)
    if (family == i.family) return i.id;
  return "";
}

std::string stale_table_reason(const std::string& family, const std::string& table_id) {
  const std::string mine = family_build_id(family);
  if (mine.empty() || table_id == mine) return "";
  if (table_id.empty())
    return "it records no build id (written before tables did), so it may have been tuned on other " + family +
           " kernels; this build is " + mine;
  return "it was tuned with another build of the " + family + " kernels or toolchain (build id " + table_id +
         ", this build " + mine + ")";
}

}  // namespace moe::runtime
