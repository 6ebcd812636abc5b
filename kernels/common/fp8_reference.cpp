#include "common/fp8_reference.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace moe::fp8_reference {

namespace {

constexpr int kGroupSize = 128;
constexpr float kLargest = 448.0f;
constexpr float kSmallestAmax = 1e-10f;

// The 127 non-negative finite values, ascending with their codes 0x00..0x7E.
const std::array<double, 127>& magnitudes() {
  static const std::array<double, 127> v = [] {
    std::array<double, 127> m{};
    for (int c = 0; c < 127; ++c) m[static_cast<std::size_t>(c)] = decode(static_cast<std::uint8_t>(c));
    return m;
  }();
  return v;
}

}  // namespace

double decode(std::uint8_t code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
  // Subnormals: mantissa/8 * 2^(1-7); normals: (1 + mantissa/8) * 2^(exponent-7).
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8.0 + mantissa, exponent - 10);
  return (code & 0x80) ? -magnitude : magnitude;
}

std::uint8_t encode(float v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(v));
  if (a >= kLargest) return sign | 0x7E;
  const auto& m = magnitudes();
  // The first value >= a, and the one below it: the nearer wins, a tie goes to the even code.
  int hi = 0;
  while (m[static_cast<std::size_t>(hi)] < a) ++hi;
  if (hi == 0 || m[static_cast<std::size_t>(hi)] == a) return sign | static_cast<std::uint8_t>(hi);
  const int lo = hi - 1;
  const double below = a - m[static_cast<std::size_t>(lo)], above = m[static_cast<std::size_t>(hi)] - a;
  const int pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<std::uint8_t>(pick);
}

float group_scale(const float* x, std::int64_t n, bool ue8m0) {
  float amax = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]);
  }
  const float s = (amax < kSmallestAmax ? kSmallestAmax : amax) / kLargest;
  if (!ue8m0 || std::isinf(s)) return s;
  int e = 0;
  const float frac = std::frexp(s, &e);  // s = frac * 2^e, frac in [0.5, 1)
  return frac == 0.5f ? s : std::ldexp(1.0f, e);
}

void quantize_row(const float* x, std::int64_t K, std::uint8_t* codes, float* scales, bool ue8m0) {
  for (std::int64_t g = 0; g * kGroupSize < K; ++g) {
    const float* xs = x + g * kGroupSize;
    const float s = group_scale(xs, kGroupSize, ue8m0);
    scales[g] = s;
    for (int i = 0; i < kGroupSize; ++i) codes[g * kGroupSize + i] = encode(xs[i] / s);
  }
}

}  // namespace moe::fp8_reference
