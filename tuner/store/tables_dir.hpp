#pragma once
// Where a sweep writes config tables when not told, and the check that it can, made before any
// measuring: a read-only or misplaced --tables must not be found only after an hour of sweeping.
#include <string>

namespace moe::tuner {

// The first directory of $MOEBENCH_CONFIG_DIR, else ./configs (relative to the current directory,
// as --help says; never the source tree the binary was built from).
std::string default_tables_dir();

// Creates `dir` when missing and proves a file can be created in it; throws moe::Error naming
// `flag`, the directory, why, and `advice` (what to do).
void check_writable_dir(const std::string& dir, const std::string& flag, const std::string& advice);
// check_writable_dir for --tables, whose advice includes --tables none.
void check_tables_dir(const std::string& dir, const std::string& flag);

}  // namespace moe::tuner
