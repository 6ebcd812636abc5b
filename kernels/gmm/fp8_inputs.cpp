// fp8 inputs for gmm (DESIGN.md 1.6): activations quantized per row and 128-wide K group,
// weights per 128x128 block. The groups' magnitudes vary over six decades, with some exactly
// zero (amax 0) and some past 448 before scaling, so the scales are exercised, not just the codes.
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "common/e4m3.hpp"
#include "common/parallel.hpp"
#include "common/rng.hpp"
#include "gmm/detail.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace {

int threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// The magnitude of one activation group: mostly O(1), sometimes tiny, huge or all zero.
float group_magnitude(Rng& rng) {
  const std::uint64_t pick = rng.next() % 16;
  if (pick == 0) return 0.0f;
  if (pick == 1) return 1e-4f;
  if (pick == 2) return 600.0f;  // values beyond 448 before the scale brings them in
  return static_cast<float>(rng.uniform(0.25, 4.0));
}

}  // namespace

void make_fp8_activations(const GmmSpec& s, std::int64_t R, const std::vector<char>& pad, std::uint64_t seed, TensorMap& in) {
  const std::int64_t K = s.k_dim(), G = s.k_groups();
  Tensor q(DType::e4m3, {R, K}), sc(DType::f32, {R, G});
  auto* qp = q.data<std::uint8_t>();
  auto* sp = sc.data<float>();
  parallel_for(R, threads(), 16, [&](std::int64_t rb, std::int64_t re) {
    std::vector<float> row(static_cast<std::size_t>(K));
    for (std::int64_t r = rb; r < re; ++r) {
      Rng rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(r) * 0xD1B54A32D192ED03ull + 11);
      for (std::int64_t g = 0; g < G; ++g) {
        const float m = pad[static_cast<std::size_t>(r)] ? 0.0f : group_magnitude(rng);
        for (std::int64_t k = g * 128; k < (g + 1) * 128; ++k) row[k] = m * static_cast<float>(rng.normal());
      }
      fp8::quantize_row(row.data(), K, qp + r * K, sp + r * G, s.ue8m0);
    }
  });
  in[s.act_name()] = std::move(q);
  in[s.act_scale_name()] = std::move(sc);
}

void make_fp8_weights(const GmmSpec& s, std::uint64_t seed, TensorMap& in) {
  const std::int64_t E = s.e_local(), NW = s.n_w(), K = s.k_dim(), NB = NW / 128, KB = s.k_groups();
  Tensor q(DType::e4m3, {E, NW, K}), sc(DType::f32, {E, NB, KB});
  auto* qp = q.data<std::uint8_t>();
  auto* sp = sc.data<float>();
  const double sd = 1.0 / std::sqrt(static_cast<double>(K));
  // One 128-row band of an expert at a time: its blocks' amax needs all 128 rows.
  parallel_for(E * NB, threads(), 1, [&](std::int64_t bb, std::int64_t be) {
    std::vector<float> band(static_cast<std::size_t>(128 * K));
    for (std::int64_t b = bb; b < be; ++b) {
      Rng rng(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(b) * 0x9E3779B97F4A7C15ull + 5);
      for (auto& v : band) v = static_cast<float>(rng.normal() * sd);
      for (std::int64_t kb = 0; kb < KB; ++kb) {
        float amax = 0;
        for (std::int64_t r = 0; r < 128; ++r)
          for (std::int64_t k = kb * 128; k < (kb + 1) * 128; ++k) amax = fp8::amax_step(amax, band[r * K + k]);
        const float scale = fp8::group_scale(amax, false);
        sp[b * KB + kb] = scale;
        for (std::int64_t r = 0; r < 128; ++r)
          for (std::int64_t k = kb * 128; k < (kb + 1) * 128; ++k)
            qp[(b * 128 + r) * K + k] = fp8::from_float(band[r * K + k] / scale);
      }
    }
  });
  in[s.weight_name()] = std::move(q);
  in[s.weight_scale_name()] = std::move(sc);
}

}  // namespace moe::gmm
