// The references' fp8 quantizer (kernels/common/fp8_reference.cpp), judged on groups built by
// hand where the answer is known without either quantizer: the largest value last, first, NaN,
// inf, all zero; then against the kernels' rule (common/e4m3.hpp) on random rows, which it must
// match code for code and scale for scale. And the fp8 validation's scale message, which must
// tell tiny scales apart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/e4m3.hpp"
#include "common/fp8_reference.hpp"
#include "common/fp8_validate.hpp"
#include "moe/tensor.hpp"

namespace {

namespace ref = moe::fp8_reference;

// 128 values in [-1, 1) but for one placed at `at` with magnitude `big`.
std::vector<float> group_with(int at, float big, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> g(128);
  for (auto& v : g) v = u(rng);
  g[static_cast<std::size_t>(at)] = big;
  return g;
}

TEST(Fp8Reference, TheGroupsLargestValueSetsTheScaleWhereverItSits) {
  for (int at : {127, 0, 64})
    for (float big : {100.0f, -100.0f}) {
      const auto g = group_with(at, big, 3 + at);
      std::vector<std::uint8_t> q(128);
      float s = 0;
      ref::quantize_row(g.data(), 128, q.data(), &s, false);
      EXPECT_EQ(s, 100.0f / 448.0f) << "largest at " << at;
      // The largest value maps to +-448 exactly: code 0x7E with its sign.
      EXPECT_EQ(q[static_cast<std::size_t>(at)], big > 0 ? 0x7E : 0xFE) << "largest at " << at;
      ref::quantize_row(g.data(), 128, q.data(), &s, true);
      EXPECT_EQ(s, 0.25f) << "ue8m0: the power of two above 100/448 = 0.223";
    }
}

TEST(Fp8Reference, NanIsSkippedInfWinsZerosGetTheFloorScale) {
  auto g = group_with(5, 2.0f, 11);
  g[127] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::uint8_t> q(128);
  float s = 0;
  ref::quantize_row(g.data(), 128, q.data(), &s, false);
  EXPECT_EQ(s, 2.0f / 448.0f) << "a NaN never wins the amax";
  EXPECT_EQ(q[127], 0x7F) << "NaN becomes the NaN code";
  EXPECT_EQ(q[5], 0x7E);

  g[0] = -std::numeric_limits<float>::infinity();
  ref::quantize_row(g.data(), 128, q.data(), &s, false);
  EXPECT_TRUE(std::isinf(s)) << s;
  ref::quantize_row(g.data(), 128, q.data(), &s, true);
  EXPECT_TRUE(std::isinf(s)) << "ue8m0 keeps inf";

  const std::vector<float> zeros(128, 0.0f);
  ref::quantize_row(zeros.data(), 128, q.data(), &s, false);
  EXPECT_EQ(s, 1e-10f / 448.0f);
  for (auto c : q) EXPECT_EQ(c, 0) << "zeros stay zero codes";
  ref::quantize_row(zeros.data(), 128, q.data(), &s, true);
  EXPECT_EQ(s, std::ldexp(1.0f, -42)) << "the power of two above 2.23e-13";
}

TEST(Fp8Reference, EncodesByNearestValueTiesToEven) {
  EXPECT_EQ(ref::encode(0.0f), 0x00);
  EXPECT_EQ(ref::encode(-0.0f), 0x80);
  EXPECT_EQ(ref::encode(std::ldexp(1.0f, -10)), 0x00) << "half the smallest subnormal ties to 0";
  EXPECT_EQ(ref::encode(std::ldexp(3.0f, -10)), 0x02) << "1.5 subnormal steps tie to the even code";
  EXPECT_EQ(ref::encode(1.0f), 0x38);
  EXPECT_EQ(ref::encode(1.0625f), 0x38) << "halfway between 1 and 1.125 goes to even";
  EXPECT_EQ(ref::encode(1.1875f), 0x3A) << "halfway between 1.125 and 1.25 goes to even";
  EXPECT_EQ(ref::encode(447.0f), 0x7E);
  EXPECT_EQ(ref::encode(1e9f), 0x7E);
  EXPECT_EQ(ref::encode(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(ref::encode(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(ref::encode(static_cast<float>(ref::decode(static_cast<std::uint8_t>(c)))), c) << "code " << c;
  }
}

// The kernels' quantizer and the reference's agree on random rows of every magnitude.
TEST(Fp8Reference, AgreesWithTheKernelsRuleOnRandomRows) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), ex(-30.0f, 12.0f);
  for (int row = 0; row < 400; ++row) {
    std::vector<float> x(512);
    const float mag = std::exp2(ex(rng));
    for (auto& v : x) v = u(rng) * mag;
    if (row % 7 == 0) x[static_cast<std::size_t>(row % 512)] = std::numeric_limits<float>::quiet_NaN();
    for (bool ue8m0 : {false, true}) {
      std::vector<std::uint8_t> qa(512), qb(512);
      std::vector<float> sa(4), sb(4);
      moe::fp8::quantize_row(x.data(), 512, qa.data(), sa.data(), ue8m0);
      ref::quantize_row(x.data(), 512, qb.data(), sb.data(), ue8m0);
      ASSERT_EQ(sa, sb) << "row " << row << " ue8m0 " << ue8m0;
      ASSERT_EQ(qa, qb) << "row " << row << " ue8m0 " << ue8m0;
    }
  }
}

// Scales of quiet groups are ~1e-12: the mismatch line must show them apart.
TEST(Fp8Validation, ScaleMismatchPrintsTinyScalesInFull) {
  moe::Tensor gq(moe::DType::e4m3, {1, 128}), rq(moe::DType::e4m3, {1, 128});
  moe::Tensor gs(moe::DType::f32, {1, 1}), rs(moe::DType::f32, {1, 1});
  for (std::int64_t j = 0; j < 128; ++j) {
    gq.data<std::uint8_t>()[j] = static_cast<std::uint8_t>(j % 100);
    rq.data<std::uint8_t>()[j] = static_cast<std::uint8_t>(j % 100);
  }
  gs.data<float>()[0] = 3e-12f;
  rs.data<float>()[0] = 2e-12f;
  const auto checks = moe::check_quantized("h", gq, gs, rq, rs, false, nullptr, 0.0, 0.0);
  std::string detail;
  for (auto& c : checks)
    if (!c.ok) detail += c.detail;
  EXPECT_NE(detail.find("is 2.99999999e-12 (0x1."), std::string::npos) << detail;
  EXPECT_NE(detail.find("want 1.99999999e-12 (0x1."), std::string::npos) << detail;
  EXPECT_EQ(detail.find("0.000000"), std::string::npos) << detail;
}

}  // namespace
