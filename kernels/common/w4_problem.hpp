#pragma once
// What every family with a 4-bit weight problem (dtype=mxfp4|int4, docs/w4.md) checks the same way.
#include <cstdint>
#include <string>

namespace moe {

// dtype names of the 4-bit formats: their activations and outputs are bf16.
bool is_w4_dtype(const std::string& dtype);

// D and I must be whole groups (a scale per `group` K elements; the zero points pack 8 rows to
// an int32): an Error naming the family, the size and what to do (--tp for I, bf16 otherwise).
void check_w4_dims(const char* family, const std::string& dtype, std::int64_t group, std::int64_t hidden,
                   std::int64_t intermediate);

}  // namespace moe
