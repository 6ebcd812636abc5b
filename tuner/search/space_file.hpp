#pragma once
// A --space FILE.json checked before sweeping: a misspelled config parameter or family name
// would otherwise go unnoticed (every config of the file merely "invalid", or a family's list
// never used), and the sweep would time only the default.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/family.hpp"

namespace moe::tuner {

// The file's JSON: a list of configs, or an object {family: [configs]}. Throws an Error naming
// the file, the config and the unknown key, with the known ones. `swept`: the families the
// sweep covers; keys of families it does not cover are not read.
nlohmann::json read_space_file(const std::string& path, const std::vector<const FamilyDesc*>& swept, Backend b);

}  // namespace moe::tuner
