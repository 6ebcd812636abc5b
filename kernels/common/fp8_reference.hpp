#pragma once
// The references' own fp8 quantizer (DESIGN.md 1.6), written apart from common/e4m3.hpp, which
// the cpu backend and the kernels share: a bug there (a group's amax skipping a value, a wrong
// carry) would otherwise pass every test that judges them with it. Plain loops and <cmath>:
// values by std::ldexp, codes by nearest-value search, amax by std::isnan and std::fabs.
#include <cstdint>

namespace moe::fp8_reference {

// The value of an E4M3FN code (NaN for S.1111.111).
double decode(std::uint8_t code);
// Round to the nearest code, ties to the even code; |v| >= 448 and infinities saturate to
// +-448, NaN gives 0x7F.
std::uint8_t encode(float v);
// A group's scale: max(amax, 1e-10) / 448, amax the largest |x| with NaNs skipped (inf counts);
// ue8m0: the smallest power of two not below it.
float group_scale(const float* x, std::int64_t n, bool ue8m0);
// A row of K values (a multiple of 128) as codes and K/128 scales.
void quantize_row(const float* x, std::int64_t K, std::uint8_t* codes, float* scales, bool ue8m0);

}  // namespace moe::fp8_reference
