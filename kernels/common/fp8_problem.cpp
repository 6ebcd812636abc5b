#include "common/fp8_problem.hpp"

#include <string>

#include "moe/error.hpp"

namespace moe {

void check_fp8_dims(const char* family, std::int64_t hidden, std::int64_t intermediate) {
  const std::string what = std::string(family) + ": fp8 (block-scaled W8A8) needs ";
  if (hidden % 128 != 0)
    throw Error(what + "hidden to be a multiple of 128 (the scale blocks), got " + std::to_string(hidden) +
                ": use dtype bf16 for this shape");
  if (intermediate % 128 != 0)
    throw Error(what + "intermediate (per TP shard) to be a multiple of 128 (the scale blocks), got " +
                std::to_string(intermediate) + ": with --model, pick a --tp that leaves I/tp a multiple of 128");
}

}  // namespace moe
