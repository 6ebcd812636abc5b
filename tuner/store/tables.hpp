#pragma once
// Config tables (`moebench/config-table@1`) from sweep results: one file per (device, kernel,
// problem), entries keyed by token count, each with the chosen config, its median, and the
// runner-up. Entries of token counts this sweep did not cover are kept. Every file is written
// atomically (temporary file + rename), so runtime dispatch never reads half a table.
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

// Returns the paths written. `device_slug` names the directory (runtime::device_slug).
std::vector<std::string> write_tables(const json& results, const std::string& dir);

}  // namespace moe::tuner
