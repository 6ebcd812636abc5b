#include "common/w4_problem.hpp"

#include "moe/error.hpp"

namespace moe {

bool is_w4_dtype(const std::string& dtype) { return dtype == "mxfp4" || dtype == "int4"; }

void check_w4_dims(const char* family, const std::string& dtype, std::int64_t group, std::int64_t hidden,
                   std::int64_t intermediate) {
  const std::string what = std::string(family) + ": " + dtype + " (4-bit weights, a scale per " + std::to_string(group) +
                           " K elements) needs ";
  if (hidden % group != 0)
    throw Error(what + "hidden to be a multiple of " + std::to_string(group) + ", got " + std::to_string(hidden) +
                ": use dtype bf16 for this shape" + (dtype == "int4" && group > 32 ? " (or group=32)" : ""));
  if (intermediate % group != 0)
    throw Error(what + "intermediate (per TP shard) to be a multiple of " + std::to_string(group) + ", got " +
                std::to_string(intermediate) + ": with --model, pick a --tp that leaves I/tp a multiple of " +
                std::to_string(group));
}

}  // namespace moe
