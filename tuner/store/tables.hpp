#pragma once
// Config tables (`moebench/config-table@1`) from sweep results: one file per (device, kernel,
// problem), entries keyed by token count, each with the chosen config, its median, and the
// runner-up. Entries of token counts this sweep did not cover are kept. Every file is written
// atomically (temporary file + rename), so runtime dispatch never reads half a table.
#include <string>
#include <utility>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

// Why a table cannot be written at `path` (a directory or FIFO in its place), "" when it can.
std::string table_place_problem(const std::string& path);
// Refuses (moe::Error) before a sweep when a (kernel, problem key) table's place under `dir` is taken.
void check_table_places(const std::string& dir, const std::string& device_slug,
                        const std::vector<std::pair<std::string, std::string>>& kernel_keys);

// An existing table that cannot be read is kept as NAME.corrupt-<time> (with a warning) and
// replaced. Returns the paths written. `device_slug` names the directory (runtime::device_slug).
std::vector<std::string> write_tables(const json& results, const std::string& dir);

}  // namespace moe::tuner
