// gmm with 4-bit weights (docs/w4.md): the tensors, the checks of given weights, random inputs
// quantized to the format, and the reference's weights: every one dequantized by w4_reference
// (exact in fp64); reference.cpp takes them through the expert function as it does bf16's.
#include <algorithm>
#include <cmath>
#include <thread>

#include "common/parallel.hpp"
#include "common/rng.hpp"
#include "common/w4_reference.hpp"
#include "gmm/detail.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace {

int threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// The nearest e2m1 code of v (|v| <= 6 after scaling), ties to the even code as OCP MX rounds.
std::uint8_t e2m1_code(float v) {
  static constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float a = std::min(std::fabs(v), 6.0f);
  unsigned best = 0;
  for (unsigned c = 1; c < 8; ++c) {
    const float d = std::fabs(a - kMag[c]), db = std::fabs(a - kMag[best]);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return static_cast<std::uint8_t>(best | (std::signbit(v) && best ? 8u : 0u));
}

// A group's magnitude: mostly O(1), sometimes tiny or large, so the scales spread over decades.
float group_magnitude(Rng& rng) {
  const std::uint64_t pick = rng.next() % 16;
  if (pick == 0) return 1e-3f;
  if (pick == 1) return 40.0f;
  return static_cast<float>(rng.uniform(0.25, 4.0));
}

}  // namespace

std::vector<TensorSpec> w4_weight_specs(const GmmSpec& s) {
  const std::int64_t E = s.e_local(), NW = s.n_w(), K = s.k_dim(), G = s.w_groups();
  const std::string w = s.weight_name(), what = s.down ? "down projection" : "rows 0..I-1 gate, I..2I-1 up";
  if (s.wq == WeightFormat::mxfp4)
    return {{w, DType::u8, {E, NW, K / 2}, "mxfp4 " + what + ": e2m1 pairs along K, the even K element in the low nibble"},
            {s.weight_scale_name(), DType::u8, {E, NW, G}, "e8m0 scale (2^(e-127)) of each 32 K elements"}};
  std::vector<TensorSpec> v = {
      {w, DType::i32, {E, NW, K / 8}, "int4 " + what + ": eight codes per int32 along K, the first in the lowest bits"},
      {s.weight_scale_name(), DType::bf16, {E, NW, G}, "bf16 scale of each " + std::to_string(s.group) + " K elements"}};
  if (s.zero_point)
    v.push_back({s.weight_zero_name(), DType::i32, {E, NW / 8, G},
                 "4-bit zero point of each group, eight weight rows per int32 (the first in the lowest bits)"});
  return v;
}

void check_w4_weights(const GmmSpec& s, const TensorMap& in) {
  const Tensor& sc = in.at(s.weight_scale_name());
  if (s.wq == WeightFormat::mxfp4) {
    const auto* e = sc.data<std::uint8_t>();
    for (std::int64_t i = 0; i < sc.numel(); ++i)
      if (e[i] == 255)
        throw Error(std::string("gmm: ") + s.weight_scale_name() + " holds the e8m0 NaN code 255 at flat index " +
                    std::to_string(i) + ": mxfp4 scales must be finite (0..254)");
    return;
  }
  const auto* v = sc.data<std::uint16_t>();
  for (std::int64_t i = 0; i < sc.numel(); ++i)
    if (!std::isfinite(bf16_to_float(v[i])))
      throw Error(std::string("gmm: ") + s.weight_scale_name() + " at flat index " + std::to_string(i) + " is " +
                  std::to_string(bf16_to_float(v[i])) + ": int4 group scales must be finite");
}

void make_w4_weights(const GmmSpec& s, std::uint64_t seed, TensorMap& in) {
  const std::int64_t E = s.e_local(), NW = s.n_w(), K = s.k_dim(), G = s.w_groups(), gs = s.group;
  const auto specs = w4_weight_specs(s);
  for (const TensorSpec& t : specs) in[t.name] = Tensor(t.dtype, t.shape);
  const double sd = 1.0 / std::sqrt(static_cast<double>(K));
  const bool mx = s.wq == WeightFormat::mxfp4;
  auto* codes = mx ? in.at(s.weight_name()).data<std::uint8_t>() : nullptr;
  auto* e8 = mx ? in.at(s.weight_scale_name()).data<std::uint8_t>() : nullptr;
  auto* words = mx ? nullptr : in.at(s.weight_name()).data<std::int32_t>();
  auto* bscale = mx ? nullptr : in.at(s.weight_scale_name()).data<std::uint16_t>();
  // Zero points per row and group, packed once all rows are made (eight rows share a word).
  std::vector<std::uint8_t> zv(s.zero_point ? static_cast<std::size_t>(E * NW * G) : 0);
  parallel_for(E * NW, threads(), 16, [&](std::int64_t rb, std::int64_t re) {
    std::vector<float> v(static_cast<std::size_t>(gs));
    std::vector<std::uint8_t> q(static_cast<std::size_t>(K));
    for (std::int64_t row = rb; row < re; ++row) {
      Rng rng(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(row) * 0x9E3779B97F4A7C15ull + 17);
      for (std::int64_t g = 0; g < G; ++g) {
        const float m = group_magnitude(rng);
        float amax = 0, lo = 0, hi = 0;
        for (auto& x : v) {
          x = static_cast<float>(rng.normal() * sd) * m;
          amax = std::max(amax, std::fabs(x));
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
        if (mx) {
          // The smallest power of two that brings the group within e2m1's 6.
          const int ex = std::clamp(static_cast<int>(std::ceil(std::log2(std::max(amax, 1e-30f) / 6.0f))), -127, 127);
          e8[row * G + g] = static_cast<std::uint8_t>(ex + 127);
          for (std::int64_t k = 0; k < gs; ++k) q[g * gs + k] = e2m1_code(std::ldexp(v[k], -ex));
          continue;
        }
        // Symmetric: codes q - 8 in [-8, 7] times amax/7; with zero points: [lo, hi] over 0..15.
        const float want = s.zero_point ? (hi - lo) / 15.0f : amax / 7.0f;
        const float scale = bf16_to_float(float_to_bf16(want > 0 ? want : 1e-3f));
        bscale[row * G + g] = float_to_bf16(scale);
        const float z = s.zero_point ? std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f) : 8.0f;
        if (s.zero_point) zv[static_cast<std::size_t>(row * G + g)] = static_cast<std::uint8_t>(z);
        for (std::int64_t k = 0; k < gs; ++k)
          q[g * gs + k] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(v[k] / scale) + z, 0.0f, 15.0f));
      }
      if (mx) {
        for (std::int64_t i = 0; i < K / 2; ++i) codes[row * (K / 2) + i] = static_cast<std::uint8_t>(q[2 * i] | (q[2 * i + 1] << 4));
      } else {
        for (std::int64_t i = 0; i < K / 8; ++i) {
          std::uint32_t w = 0;
          for (int j = 0; j < 8; ++j) w |= static_cast<std::uint32_t>(q[8 * i + j]) << (4 * j);
          words[row * (K / 8) + i] = static_cast<std::int32_t>(w);
        }
      }
    }
  });
  if (!s.zero_point) return;
  auto* zeros = in.at(s.weight_zero_name()).data<std::int32_t>();
  for (std::int64_t row = 0; row < E * NW; ++row) {
    const std::int64_t e = row / NW, n = row % NW;
    for (std::int64_t g = 0; g < G; ++g) {
      auto& w = zeros[(e * (NW / 8) + n / 8) * G + g];
      w = static_cast<std::int32_t>(static_cast<std::uint32_t>(w) | (std::uint32_t{zv[row * G + g]} << (4 * (n % 8))));
    }
  }
}

void w4_dequant_row(const GmmSpec& s, const TensorMap& in, std::int64_t e, std::int64_t n, double* out) {
  const std::int64_t K = s.k_dim(), G = s.w_groups(), NW = s.n_w(), row = e * NW + n;
  if (s.wq == WeightFormat::mxfp4) {
    const auto* codes = in.at(s.weight_name()).data<std::uint8_t>() + row * (K / 2);
    const auto* scales = in.at(s.weight_scale_name()).data<std::uint8_t>() + row * G;
    for (std::int64_t k = 0; k < K; ++k) out[k] = w4_reference::mxfp4(codes, scales, k);
    return;
  }
  const auto* words = in.at(s.weight_name()).data<std::int32_t>() + row * (K / 8);
  const auto* scales = in.at(s.weight_scale_name()).data<std::uint16_t>() + row * G;
  const std::int32_t* zeros = s.zero_point ? in.at(s.weight_zero_name()).data<std::int32_t>() + (e * (NW / 8) + n / 8) * G : nullptr;
  for (std::int64_t k = 0; k < K; ++k) {
    const std::int64_t g = k / s.group;
    const unsigned z = zeros ? w4_reference::nibble(zeros + g, n % 8) : 8u;
    out[k] = w4_reference::int4(w4_reference::nibble(words, k), z, scales[g]);
  }
}

}  // namespace moe::gmm
