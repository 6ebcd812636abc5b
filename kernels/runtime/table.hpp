#pragma once
// Config tables (`moebench/config-table@1`): where they live, how they are named, and
// loading them. The tuner writes them; runtime dispatch and `moebench lookup` read them
// through this one loader.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe::runtime {

inline constexpr const char* kTableSchema = "moebench/config-table@1";

struct TableEntry {
  std::int64_t tokens = 0;
  Params config;
  double median_us = 0;
  bool kept_default = false;  // the winner was within noise of the default, so the default stays
  bool has_runner_up = false;
  Params runner_up;
  double runner_up_median_us = 0;
};

struct ConfigTable {
  std::string path;
  std::string kernel, backend, device;
  std::string problem_key;
  std::string build_id;  // "build": {"id"}: of the kernels that were tuned; "" in older tables
  std::map<std::int64_t, TableEntry> entries;  // by token count
  std::vector<std::int64_t> keys;              // the entries' token counts, ascending: nearest_index's
};

// "cpu" for the cpu backend (tiles are tuned per host, not per model name, so tables travel
// between similar hosts); the lower-cased device name with runs of other characters as '-'
// for cuda ("NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3").
std::string device_slug(const DeviceInfo& dev);
std::string slugify(const std::string& name);
// The problem without its token count, as "name=value,..." in name order: one table per key
// (scale_fmt only where dtype is fp8, the expert function's parameters only where they differ
// from silu on split w13 without biases and matter to the stage, so other keys read as before).
std::string problem_key(const Params& problem);
// <dir>/<device>/<kernel>/<problem key>.json (a key over 200 bytes: its first 160 and a hash of it)
std::string table_path(const std::string& dir, const std::string& device, const std::string& kernel,
                       const std::string& problem_key);
// Where tables are looked for, first first: $MOEBENCH_CONFIG_DIR (':'-separated) alone when set;
// else ./configs (sweep's default --tables) when it exists, then the shipped tables: the source
// tree's configs/ when it exists, else the installed share/moebench/configs.
std::vector<std::string> default_table_dirs();

// A table entry's key as a token count: decimal digits only, >= 1; -1 when it is not one.
std::int64_t token_count_key(const std::string& key);

// Parses a table file; an unreadable or malformed file is an Error naming the file and the fault.
ConfigTable load_table(const std::string& path);
// The table at `path`, loaded once and reloaded when the file changes; nullptr when there is none.
std::shared_ptr<const ConfigTable> cached_table(const std::string& path);

}  // namespace moe::runtime
