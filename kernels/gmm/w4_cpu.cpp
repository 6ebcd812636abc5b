// The cpu backend's 4-bit dequantizer (docs/w4.md): tables and bit moves, written apart from
// the reference's plain formulas (common/w4_reference.cpp) so each checks the other. Every
// value lands exactly in fp32 (an e2m1 value times a power of two; a 4-bit integer times a
// bf16 scale), so the tile's fp32 products are those of bf16 weights.
#include <cstring>

#include "gmm/detail.hpp"

namespace moe::gmm {

namespace {

// e2m1 by code: 0, 0.5, 1, 1.5, 2, 3, 4, 6, then the same negated.
constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// e8m0 as the fp32 with that biased exponent: 2^(e-127). e = 0 is below fp32's normals: the
// subnormal with only the top mantissa bit set; 255 is NaN (the checks refuse it).
float e8m0_f32(std::uint8_t e) {
  const std::uint32_t bits = e == 0 ? 0x00400000u : e == 255 ? 0x7FC00000u : std::uint32_t{e} << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_f32(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

W4Rows w4_rows(const GmmSpec& s, const RefMap& in) {
  W4Rows w;
  w.wq = s.wq;
  w.K = s.k_dim();
  w.NW = s.n_w();
  w.group = s.group;
  w.codes = need(in, s.weight_name()).data;
  w.scales = need(in, s.weight_scale_name()).data;
  if (s.zero_point) w.zeros = need(in, s.weight_zero_name()).as<const std::int32_t>();
  return w;
}

void w4_row_to_f32(const W4Rows& w, std::int64_t row, std::int64_t k_pad, float* dst) {
  const std::int64_t K = w.K, G = K / w.group;
  if (w.wq == WeightFormat::mxfp4) {
    const auto* c = static_cast<const std::uint8_t*>(w.codes) + row * (K / 2);
    const auto* e = static_cast<const std::uint8_t*>(w.scales) + row * G;
    for (std::int64_t g = 0; g < G; ++g) {
      const float scale = e8m0_f32(e[g]);
      for (std::int64_t i = g * 16; i < (g + 1) * 16; ++i) {
        dst[2 * i] = kE2m1[c[i] & 0xF] * scale;
        dst[2 * i + 1] = kE2m1[c[i] >> 4] * scale;
      }
    }
  } else {
    const auto* q = static_cast<const std::uint32_t*>(w.codes) + row * (K / 8);
    const auto* sc = static_cast<const std::uint16_t*>(w.scales) + row * G;
    const std::int64_t e = row / w.NW, n = row % w.NW;
    const std::uint32_t* zw = w.zeros ? reinterpret_cast<const std::uint32_t*>(w.zeros) + (e * (w.NW / 8) + n / 8) * G : nullptr;
    const int zshift = static_cast<int>(4 * (n % 8));
    for (std::int64_t g = 0; g < G; ++g) {
      const float scale = bf16_f32(sc[g]);
      const int z = zw ? static_cast<int>((zw[g] >> zshift) & 0xFu) : 8;
      for (std::int64_t i = g * w.group / 8; i < (g + 1) * w.group / 8; ++i) {
        const std::uint32_t word = q[i];
        for (int j = 0; j < 8; ++j) dst[8 * i + j] = static_cast<float>(static_cast<int>((word >> (4 * j)) & 0xFu) - z) * scale;
      }
    }
  }
  std::memset(dst + K, 0, static_cast<std::size_t>(k_pad - K) * sizeof(float));
}

}  // namespace moe::gmm
