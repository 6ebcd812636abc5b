#pragma once
// What every family with an fp8 problem (dtype=fp8, DESIGN.md 1.6) checks the same way.
#include <cstdint>

namespace moe {

// D and I must be multiples of 128, the weight blocks and activation groups: an Error naming
// the family, the size and what to do (--tp for I, bf16 otherwise).
void check_fp8_dims(const char* family, std::int64_t hidden, std::int64_t intermediate = 0);

}  // namespace moe
