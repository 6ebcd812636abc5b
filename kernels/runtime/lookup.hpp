#pragma once
// Runtime dispatch's choice of a config for a problem: the table entry for the exact token
// count, else the nearest key in log2 distance (ties to the smaller), else the family's
// default with one warning naming the missing table and the command that would tune it.
// `moebench lookup` prints this same choice.
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "runtime/table.hpp"

namespace moe::runtime {

enum class Match { exact, nearest, fallback };
std::string_view match_name(Match m);  // "exact", "nearest", "default"

struct Choice {
  Match how = Match::fallback;
  Params config;      // complete and valid for the problem
  std::string table;  // the table used, or where it was expected
  std::int64_t key = 0;  // the entry's token count (exact or nearest)
  TableEntry entry;      // the entry used (exact or nearest)
  std::string reason;    // one line: why this config
  std::string warning;   // set when falling back to the default
  bool missing = false;  // the fallback's cause: no table in any of the dirs
};

// The index in `sorted` (ascending, distinct keys) of the key for `tokens`: itself when present,
// else the nearest in |log2(key/tokens)| with ties to the smaller key; `sorted` must not be
// empty. A binary search: moe::Kernel asks once per entry of its table, so a linear scan made a
// table of 100,000 entries take many minutes to bind. `reads`, when given, counts the keys read.
std::size_t nearest_index(const std::vector<std::int64_t>& sorted, std::int64_t tokens, std::size_t* reads = nullptr);
// The key nearest_index chooses; -1 when `sorted` is empty.
std::int64_t nearest_key(const std::vector<std::int64_t>& sorted, std::int64_t tokens);

// `problem` is complete and includes "tokens". Tables are looked for in `dirs` in order.
// A fallback prints its warning on stderr once per missing table per process unless `quiet`.
Choice choose_config(const FamilyDesc& f, Backend b, const Params& problem, const DeviceInfo& dev,
                     const std::vector<std::string>& dirs, bool quiet = false);

// `moebench sweep <family> --<param> <value> ... --backend <b> --tables <dir>`, naming only the
// parameters that differ from their defaults.
std::string sweep_command(const FamilyDesc& f, Backend b, const Params& problem, const std::string& dir);

// Prints "moebench: warning: <msg>" on stderr, the first time per `key` in this process.
void warn_once(const std::string& key, const std::string& msg);

}  // namespace moe::runtime
