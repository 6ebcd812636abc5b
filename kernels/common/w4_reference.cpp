#include "common/w4_reference.hpp"

#include <cmath>
#include <limits>

#include "moe/dtype.hpp"

namespace moe::w4_reference {

double e2m1(unsigned nibble) {
  const double sign = (nibble & 8) ? -1.0 : 1.0;
  const unsigned exp = (nibble >> 1) & 3, man = nibble & 1;
  if (exp == 0) return sign * 0.5 * man;
  return sign * std::ldexp(1.0 + 0.5 * man, static_cast<int>(exp) - 1);
}

double e8m0(unsigned e) {
  if (e == 255) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(e) - 127);
}

double mxfp4(const std::uint8_t* codes, const std::uint8_t* scales, std::int64_t k) {
  const std::uint8_t byte = codes[k / 2];
  const unsigned code = k % 2 == 0 ? byte & 0xF : byte >> 4;
  return e2m1(code) * e8m0(scales[k / 32]);
}

unsigned nibble(const std::int32_t* words, std::int64_t k) {
  const auto w = static_cast<std::uint32_t>(words[k / 8]);
  return (w >> (4 * (k % 8))) & 0xF;
}

double int4(unsigned q, unsigned zero, std::uint16_t scale_bf16) {
  return (static_cast<double>(q) - static_cast<double>(zero)) * bf16_to_float(scale_bf16);
}

}  // namespace moe::w4_reference
