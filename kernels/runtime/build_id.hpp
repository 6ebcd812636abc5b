#pragma once
// Which build of a family's kernels a table was tuned with. The id hashes the family's sources
// and the CUDA toolchain at build time (cmake/build_ids.cmake): a table of another id may name
// configs that are no longer the best, or no longer built, so runtime dispatch treats it as
// missing. Families outside the library (tests' own) have no id and are never checked.
#include <string>

namespace moe::runtime {

// "" for a family this build does not know.
std::string family_build_id(const std::string& family);

// Why a table recording `table_id` does not apply to this build of `family` ("" when it does).
std::string stale_table_reason(const std::string& family, const std::string& table_id);

}  // namespace moe::runtime
