#pragma once
// Range checks on numeric flags, run on the text before CLI11 converts it, so a bad value is
// one line naming the flag, the value and what is allowed ("--tp 0: must be a positive
// integer"), exit 2. CLI11's own PositiveNumber/Range print DBL_MAX as their bound instead.
#include <string>

#include <CLI/CLI.hpp>

#include "moe/family.hpp"

namespace moe::app {

enum class Allowed {
  positive_int,         // 1 .. INT_MAX
  non_negative_int,     // 0 .. INT_MAX
  positive_number,      // finite, > 0
  non_negative_number,  // finite, >= 0
  seed,                 // 0 .. 2^64-1 (a minus sign would wrap around to a huge seed)
  thread_count,         // 0 .. 4x the hardware threads (0: all of them)
};

// Adds the check to `opt`; `note` (e.g. "0: all cores") is appended to the message.
CLI::Option* allow_only(CLI::Option* opt, Allowed allowed, const std::string& note = "");

// A flag that only means something for the cuda backend, given with another (cpu, emu): refused,
// so a user who asked for GPUs learns they are not used rather than timing the cpu unawares.
void refuse_for_cpu(const CLI::App& cmd, const std::string& flag, const std::string& meaning, Backend b = Backend::cpu);

}  // namespace moe::app
