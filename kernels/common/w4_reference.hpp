#pragma once
// The 4-bit weight formats' definitions (docs/w4.md), written plainly in fp64 for the references.
// Nothing the backends run calls these: the cpu backend's dequantizer (gmm/w4_cpu.cpp) is its own.
#include <cstdint>

namespace moe::w4_reference {

// OCP MX e2m1: sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0 is subnormal (0, 0.5).
double e2m1(unsigned nibble);
// OCP MX e8m0: 2^(e - 127); 255 is NaN.
double e8m0(unsigned e);
// mxfp4 element k of a row: codes [K/2] (element 2i in the low nibble of byte i, 2i+1 in the
// high one), scales [K/32] e8m0.
double mxfp4(const std::uint8_t* codes, const std::uint8_t* scales, std::int64_t k);
// The 4-bit field k of int32 words packed eight to a word, field 0 in the lowest bits.
unsigned nibble(const std::int32_t* words, std::int64_t k);
// An int4 element: (q - z) * scale, q its code, z its group's zero point (8, the signed code's
// offset, when symmetric), scale its group's bf16 scale.
double int4(unsigned q, unsigned zero, std::uint16_t scale_bf16);

}  // namespace moe::w4_reference
