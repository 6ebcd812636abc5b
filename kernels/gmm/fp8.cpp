// gmm's fp8 definition (DESIGN.md 1.6): per expert and per 128-wide K block, the exact sum of
// code products (fp64 holds it exactly), times x_scale * w_scale, summed in fp64: the product
// of the dequantized values. up: silu(gate) * up rounded to fp32, then requantized per 1x128
// group as a kernel must; down: times the routed weight, rounded once to bf16.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

#include "common/fp8_reference.hpp"
#include "common/parallel.hpp"
#include "common/fp8_validate.hpp"
#include "common/validate.hpp"
#include "gmm/detail.hpp"

namespace moe::gmm {

namespace {

double block_dot(const float* a, const float* w) {
  double s = 0;
  for (int k = 0; k < 128; ++k) s += static_cast<double>(a[k]) * w[k];
  return s;
}

void decode(const std::uint8_t* q, std::int64_t n, float* f) {
  for (std::int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(fp8_reference::decode(q[i]));
}

}  // namespace

void reference_fp8(const GmmSpec& s, const TensorMap& in, TensorMap& out, const std::vector<std::int64_t>& rows) {
  const Tensor& act = in.at(s.act_name());
  const auto* qa = act.data<std::uint8_t>();
  const auto* xs = in.at(s.act_scale_name()).data<float>();
  const auto* qw = in.at(s.weight_name()).data<std::uint8_t>();
  const auto* ws = in.at(s.weight_scale_name()).data<float>();
  const auto* o = in.at("offsets").data<std::int32_t>();
  const float* rw = s.routed_weight ? in.at("row_weight").data<float>() : nullptr;
  Tensor& y = out.at(s.out_name());
  Tensor* hs = s.down ? nullptr : &out.at("h_scale");
  const std::int64_t R = act.shape()[0], K = s.k_dim(), KB = s.k_groups(), NW = s.n_w(), NO = s.n_out(), I = s.intermediate;
  const std::int64_t OG = NO / 128;  // up: h groups per row
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // Rows left out: NaN (never a plausible result); padding rows: what a zero row becomes.
  const auto pad = zero_rows(act);
  const float zero = 0.0f, zero_scale = fp8_reference::group_scale(&zero, 1, s.ue8m0);
  for (std::int64_t r = 0; r < R; ++r) {
    const bool skip = !pad[r] && static_cast<std::int64_t>(rows.size()) != R;
    for (std::int64_t j = 0; j < NO; ++j) y.set(r * NO + j, skip ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    if (hs)
      for (std::int64_t g = 0; g < OG; ++g) hs->data<float>()[r * OG + g] = skip ? std::nanf("") : zero_scale;
  }

  std::vector<float> wf, af, hf;
  auto row_it = rows.begin();
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    auto row_end = std::lower_bound(row_it, rows.end(), std::int64_t{o[e + 1]});
    std::vector<std::int64_t> mine;
    for (auto it = row_it; it != row_end; ++it)
      if (!pad[*it]) mine.push_back(*it);
    row_it = row_end;
    if (mine.empty()) continue;
    wf.resize(static_cast<std::size_t>(NW * K));
    parallel_for(NW, threads, 16, [&](std::int64_t b, std::int64_t x) { decode(qw + (e * NW + b) * K, (x - b) * K, wf.data() + b * K); });
    af.resize(mine.size() * static_cast<std::size_t>(K));
    for (std::size_t i = 0; i < mine.size(); ++i) decode(qa + mine[i] * K, K, af.data() + i * K);
    hf.assign(mine.size() * static_cast<std::size_t>(NO), 0.0f);
    const float* we = ws + e * (NW / 128) * KB;
    auto product = [&](std::size_t i, std::int64_t n) {  // row i of `mine` times weight row n
      double acc = 0;
      for (std::int64_t b = 0; b < KB; ++b)
        acc += static_cast<double>(xs[mine[i] * KB + b]) * we[(n / 128) * KB + b] *
               block_dot(af.data() + i * K + b * 128, wf.data() + n * K + b * 128);
      return acc;
    };
    parallel_for(NO, threads, 8, [&](std::int64_t jb, std::int64_t je) {
      for (std::size_t i = 0; i < mine.size(); ++i)
        for (std::int64_t j = jb; j < je; ++j) {
          if (!s.down) {
            const double g = product(i, j), u = product(i, I + j);
            hf[i * NO + j] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
          } else {
            const double v = product(i, j);
            y.set(mine[i] * NO + j, rw ? v * rw[mine[i]] : v);
          }
        }
    });
    if (!s.down)
      for (std::size_t i = 0; i < mine.size(); ++i)
        fp8_reference::quantize_row(hf.data() + i * NO, NO, y.data<std::uint8_t>() + mine[i] * NO, hs->data<float>() + mine[i] * OG,
                          s.ue8m0);
  }
}


Validation validate_fp8_up(const GmmSpec& s, const TensorMap& in, const TensorMap& got, const TensorMap& ref) {
  const auto pad = zero_rows(in.at(s.act_name()));
  return make_validation(
      check_quantized("h", got.at("h"), got.at("h_scale"), ref.at("h"), ref.at("h_scale"), s.ue8m0, &pad, kHScaleRtol,
                      kHRangeAtol));
}

}  // namespace moe::gmm
