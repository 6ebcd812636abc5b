// The cpu backend's fp8 gmm: tiles of block_m rows by one 128-wide group of output columns, so
// an up tile holds whole h groups and requantizes them itself, as the fused GPU epilogue does.
// Each 128 K block sums its code products in fp32 (8 lanes), then is scaled by x_scale *
// w_scale into an fp32 accumulator: DeepGEMM's promotion, the order DESIGN.md 1.6 allows.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <vector>

#include "common/e4m3.hpp"
#include "common/parallel.hpp"
#include "gmm/detail.hpp"

namespace moe::gmm {

namespace {

float dot128(const float* a, const float* w) {
  float l[8] = {};
  for (int k = 0; k < 128; k += 8)
    for (int t = 0; t < 8; ++t) l[t] += a[k + t] * w[k + t];
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// Codes to floats by table: the tiles decode whole weight rows, and the branchy decoder would
// cost as much as the products.
const float* decode_table() {
  static const auto t = [] {
    std::array<float, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = fp8::to_float(static_cast<std::uint8_t>(c));
    return v;
  }();
  return t.data();
}

struct Tile {
  std::int64_t e, row0, row1, group;
};

}  // namespace

void run_fp8_cpu(const GmmSpec& s, std::int64_t block_m, const RefMap& in, const RefMap& out, int threads) {
  const TensorRef& act = need(in, s.act_name());
  const auto* qa = act.as<const std::uint8_t>();
  const auto* xs = need(in, s.act_scale_name()).as<const float>();
  const auto* qw = need(in, s.weight_name()).as<const std::uint8_t>();
  const auto* ws = need(in, s.weight_scale_name()).as<const float>();
  const auto* off = need(in, "offsets").as<const std::int32_t>();
  const float* rw = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  const std::int64_t R = act.shape[0], K = s.k_dim(), KB = s.k_groups(), NW = s.n_w(), NO = s.n_out(), I = s.intermediate;
  const std::int64_t OG = NO / 128;
  auto* hq = s.down ? nullptr : need(out, "h").as<std::uint8_t>();
  auto* hs = s.down ? nullptr : need(out, "h_scale").as<float>();
  auto* y = s.down ? need(out, "y_sorted").as<std::uint16_t>() : nullptr;

  std::vector<Tile> tiles;
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    const std::int64_t b = std::clamp<std::int64_t>(off[e], 0, R), x = std::clamp<std::int64_t>(off[e + 1], b, R);
    for (std::int64_t g = 0; g < OG && b < x; ++g)
      for (std::int64_t r = b; r < x; r += block_m) tiles.push_back({e, r, std::min(r + block_m, x), g});
  }
  const auto n = static_cast<std::int64_t>(tiles.size());
  std::atomic<std::int64_t> next{0};
  const std::int64_t workers = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(n, 1));
  const float zero_scale = fp8::group_scale(0.0f, s.ue8m0);
  const float* lut = decode_table();
  parallel_for(workers, static_cast<int>(workers), 1, [&](std::int64_t, std::int64_t) {
    std::vector<float> a(static_cast<std::size_t>(block_m * K)), w(static_cast<std::size_t>(K)),
        acc(static_cast<std::size_t>(block_m * 256));
    std::vector<char> live(static_cast<std::size_t>(block_m));
    for (std::int64_t ti = next++; ti < n; ti = next++) {
      const Tile& t = tiles[static_cast<std::size_t>(ti)];
      const std::int64_t m = t.row1 - t.row0;
      for (std::int64_t i = 0; i < m; ++i) {
        const std::uint8_t* src = qa + (t.row0 + i) * K;
        live[i] = std::any_of(src, src + K, [](std::uint8_t q) { return (q & 0x7F) != 0; });
        if (live[i])
          for (std::int64_t k = 0; k < K; ++k) a[i * K + k] = lut[src[k]];
      }
      // Up: the group's gate columns then its up columns; down: its output columns.
      const int parts = s.down ? 1 : 2;
      for (int p = 0; p < parts; ++p)
        for (std::int64_t c = 0; c < 128; ++c) {
          const std::int64_t row = p * I + t.group * 128 + c;  // weight row
          const std::uint8_t* wsrc = qw + (t.e * NW + row) * K;
          for (std::int64_t k = 0; k < K; ++k) w[k] = lut[wsrc[k]];
          const float* wsc = ws + (t.e * (NW / 128) + row / 128) * KB;
          for (std::int64_t i = 0; i < m; ++i) {
            if (!live[i]) continue;
            const float* xsc = xs + (t.row0 + i) * KB;
            float sum = 0;
            for (std::int64_t b = 0; b < KB; ++b) sum += xsc[b] * wsc[b] * dot128(&a[i * K + b * 128], &w[b * 128]);
            acc[i * 256 + p * 128 + c] = sum;
          }
        }
      for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t r = t.row0 + i;
        if (s.down) {
          for (std::int64_t c = 0; c < 128; ++c)
            y[r * NO + t.group * 128 + c] = live[i] ? float_to_bf16(rw ? acc[i * 256 + c] * rw[r] : acc[i * 256 + c]) : 0;
          continue;
        }
        std::uint8_t* q = hq + r * NO + t.group * 128;
        if (!live[i]) {
          std::fill(q, q + 128, std::uint8_t{0});
          hs[r * OG + t.group] = zero_scale;
          continue;
        }
        float h[128];
        for (std::int64_t c = 0; c < 128; ++c) {
          const float g = acc[i * 256 + c], u = acc[i * 256 + 128 + c];
          h[c] = g / (1.0f + std::exp(-g)) * u;
        }
        hs[r * OG + t.group] = fp8::quantize_group(h, 128, q, s.ue8m0);
      }
    }
  });
}

}  // namespace moe::gmm
