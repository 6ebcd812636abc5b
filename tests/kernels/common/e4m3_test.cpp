// kernels/common/e4m3.hpp against an implementation written here from the OCP FP8 text alone
// (E4M3FN: bias 7, no infinities, S.1111.111 the only NaN, max 448) and PTX's
// cvt.rn.satfinite (round to nearest even, finite overflow and infinities clamp to +-max,
// NaN stays NaN). The model shares no code with the kernel header: it lists the 254 finite
// values and picks the nearest in double, so a wrong shift or carry cannot cancel out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/e4m3.hpp"

namespace {

double model_decode(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

struct Finite {
  double value;
  int code;
};

// Every non-negative finite code by value: 0x00..0x7E.
const std::vector<Finite>& positives() {
  static const std::vector<Finite> v = [] {
    std::vector<Finite> r;
    for (int c = 0; c <= 0x7E; ++c) r.push_back({model_decode(c), c});
    return r;
  }();
  return v;
}

int model_encode(float f) {
  if (std::isnan(f)) return -1;  // any NaN code
  const int sign = std::signbit(f) ? 0x80 : 0;
  const double a = std::fabs(static_cast<double>(f));
  const auto& p = positives();
  if (a >= p.back().value) return sign | p.back().code;
  // The two neighbours below and above; the nearer wins, a tie goes to the even mantissa.
  auto hi = std::lower_bound(p.begin(), p.end(), a, [](const Finite& x, double v) { return x.value < v; });
  if (hi->value == a) return sign | hi->code;
  auto lo = hi - 1;
  const double dl = a - lo->value, dh = hi->value - a;
  if (dl < dh) return sign | lo->code;
  if (dh < dl) return sign | hi->code;
  return sign | ((lo->code & 1) == 0 ? lo->code : hi->code);
}

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void expect_encodes(float f, std::int64_t* checked) {
  const int want = model_encode(f);
  const int got = moe::fp8::from_float(f);
  ++*checked;
  if (want < 0) {
    ASSERT_EQ(got & 0x7F, 0x7F) << "NaN bits 0x" << std::hex << bits(f) << " must stay NaN";
    return;
  }
  ASSERT_EQ(got, want) << "f32 bits 0x" << std::hex << bits(f) << " (" << f << ")";
}

TEST(E4m3, AllDecodingsMatchTheFormatDefinition) {
  for (int c = 0; c < 256; ++c) {
    const double want = model_decode(c);
    const float got = moe::fp8::to_float(static_cast<std::uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << c;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), want) << "code 0x" << std::hex << c;
    EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << "code 0x" << std::hex << c;  // -0 included
  }
  EXPECT_EQ(moe::fp8::to_float(0x7E), 448.0f);
  EXPECT_EQ(moe::fp8::to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(E4m3, EncodingNearEveryRoundingBoundary) {
  std::int64_t checked = 0;
  // Around every representable value and every midpoint between neighbours (positive and
  // negative), every f32 bit pattern within 64 ulps: the ties, the carries into the exponent,
  // the subnormal/normal seam and the clamp at 448.
  std::vector<double> anchors;
  const auto& p = positives();
  for (std::size_t i = 0; i < p.size(); ++i) {
    anchors.push_back(p[i].value);
    if (i + 1 < p.size()) anchors.push_back((p[i].value + p[i + 1].value) / 2);
  }
  anchors.push_back(464.0);  // the midpoint to the next (non-existent) value above 448
  anchors.push_back(std::ldexp(1.0, -10));  // half the smallest subnormal
  for (double a : anchors)
    for (float sgn : {1.0f, -1.0f}) {
      const std::uint32_t c = bits(static_cast<float>(a) * sgn);
      for (std::int64_t d = -64; d <= 64; ++d) {
        const std::int64_t b = static_cast<std::int64_t>(c & 0x7FFFFFFFu) + d;
        if (b < 0 || b > 0x7F800000) continue;
        expect_encodes(from_bits(static_cast<std::uint32_t>(b) | (c & 0x80000000u)), &checked);
      }
    }
  // Specials: zeros, f32 subnormals, the largest finite f32, infinities, NaNs.
  for (std::uint32_t u : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
                          0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u})
    expect_encodes(from_bits(u), &checked);
  EXPECT_EQ(moe::fp8::from_float(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(moe::fp8::from_float(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_GT(checked, 60000);
}

TEST(E4m3, EncodingOverADenseRandomSample) {
  std::mt19937 rng(19);
  std::int64_t checked = 0;
  // Uniform bit patterns (every exponent equally) and values within the e4m3 range.
  for (int i = 0; i < 300000; ++i) expect_encodes(from_bits(rng()), &checked);
  std::uniform_real_distribution<float> in_range(-500.0f, 500.0f);
  for (int i = 0; i < 300000; ++i) {
    const float v = in_range(rng);
    expect_encodes(std::ldexp(v, -static_cast<int>(rng() % 20)), &checked);
  }
}

TEST(E4m3, RoundTripOfEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(moe::fp8::from_float(moe::fp8::to_float(static_cast<std::uint8_t>(c))), c) << "code 0x" << std::hex << c;
  }
}

TEST(E4m3, GroupScalesFollowTheDesign) {
  // fp32: amax / 448, with 1e-10 as the floor for an all-zero group.
  EXPECT_EQ(moe::fp8::group_scale(896.0f, false), 2.0f);
  EXPECT_EQ(moe::fp8::group_scale(0.0f, false), 1e-10f / 448.0f);
  // ue8m0: the smallest power of two at or above; powers of two stay.
  EXPECT_EQ(moe::fp8::group_scale(448.0f, true), 1.0f);
  EXPECT_EQ(moe::fp8::group_scale(449.0f, true), 2.0f);
  EXPECT_EQ(moe::fp8::group_scale(300.0f, true), 1.0f);
  const float tiny = moe::fp8::group_scale(0.0f, true);
  EXPECT_EQ(tiny, std::exp2(std::ceil(std::log2(1e-10 / 448.0))));
  EXPECT_TRUE(std::isinf(moe::fp8::group_scale(std::numeric_limits<float>::infinity(), true)));
}

TEST(E4m3, QuantizeGroupSkipsNaNInAmaxAndKeepsIt) {
  float x[128];
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (float& v : x) v = n(rng);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[9] = -1000.0f;
  std::uint8_t q[128];
  const float s = moe::fp8::quantize_group(x, 128, q, false);
  EXPECT_EQ(s, 1000.0f / 448.0f);
  EXPECT_EQ(q[9], 0xFE);  // -448
  EXPECT_EQ(q[5] & 0x7F, 0x7F);
  for (int i = 0; i < 128; ++i)
    if (i != 5) EXPECT_EQ(q[i], model_encode(x[i] / s)) << i;
  // An infinite element: the scale is inf, finite elements become 0 and infinite ones NaN.
  x[5] = std::numeric_limits<float>::infinity();
  const float si = moe::fp8::quantize_group(x, 128, q, false);
  EXPECT_TRUE(std::isinf(si));
  EXPECT_EQ(q[5] & 0x7F, 0x7F);
  EXPECT_EQ(q[0] & 0x7F, 0);
}

}  // namespace
