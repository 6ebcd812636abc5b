// The definition of gmm: per expert, out = act * W^T with fp64 sums of the exact products of
// the dtype operands; up: gate and up (plus bias13) through silu(gate) * up or swiglu_oai;
// down: plus bias2, times row_weight; then rounded to dtype. All-zero (padding) rows give zeros.
// Plain loops; only spread over the cores (and sampled when huge) so preset shapes finish.
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "common/parallel.hpp"
#include "gmm/detail.hpp"

namespace moe::gmm {

namespace {

int ref_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

float to_float(DType t, std::uint16_t v) { return t == DType::bf16 ? bf16_to_float(v) : f16_to_float(v); }

// The weights are floats (bf16/f16 exactly) or, for 4-bit formats, doubles: an e2m1 value times
// 2^(e-127) can pass fp32's range.
template <class W>
double dot(const float* a, const W* b, std::int64_t n) {
  // Four sums only to keep several additions in flight; each is still fp64.
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += static_cast<double>(a[k]) * b[k];
    s1 += static_cast<double>(a[k + 1]) * b[k + 1];
    s2 += static_cast<double>(a[k + 2]) * b[k + 2];
    s3 += static_cast<double>(a[k + 3]) * b[k + 3];
  }
  for (; k < n; ++k) s0 += static_cast<double>(a[k]) * b[k];
  return (s0 + s1) + (s2 + s3);
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// gpt-oss's clamped SwiGLU: gate clamped above, up on both sides, up shifted by one.
double swiglu_oai(double gate, double up, double alpha, double limit) {
  if (gate > limit) gate = limit;
  if (up > limit) up = limit;
  if (up < -limit) up = -limit;
  return (up + 1.0) * (gate / (1.0 + std::exp(-alpha * gate)));
}

}  // namespace

std::vector<std::int64_t> reference_rows(const GmmSpec& s, const TensorMap& in, bool* all_rows, bool every_row) {
  const Tensor& act = in.at(s.act_name());
  const std::int64_t R = act.shape()[0];
  const double per_row = static_cast<double>(s.k_dim()) * static_cast<double>(s.n_w());
  std::vector<std::int64_t> rows;
  if (every_row || static_cast<double>(R) * per_row <= kReferenceFullMacs) {
    *all_rows = true;
    rows.resize(R);
    for (std::int64_t r = 0; r < R; ++r) rows[r] = r;
    return rows;
  }
  // Padding rows are known to be zero; sample the real ones.
  const auto pad = zero_rows(act);
  std::vector<std::int64_t> real;
  for (std::int64_t r = 0; r < R; ++r)
    if (!pad[r]) real.push_back(r);
  const auto n = static_cast<std::size_t>(
      std::max<double>(static_cast<double>(kReferenceMinRows), std::floor(kReferenceFullMacs / per_row)));
  *all_rows = real.size() <= n;
  if (*all_rows) return real;
  // Each expert's first and last real row (segment edges are where tiles go wrong), then an
  // even spread over all real rows.
  const auto* o = in.at("offsets").data<std::int32_t>();
  std::vector<std::int64_t> edges;
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    auto b = std::lower_bound(real.begin(), real.end(), std::int64_t{o[e]});
    auto x = std::lower_bound(real.begin(), real.end(), std::int64_t{o[e + 1]});
    if (b == x) continue;
    edges.push_back(*b);
    edges.push_back(*(x - 1));
  }
  if (edges.size() <= n / 2) rows = edges;
  const std::size_t spread = n - rows.size();
  for (std::size_t i = 0; i < spread; ++i)
    rows.push_back(real[static_cast<std::size_t>((static_cast<double>(i) + 0.5) * static_cast<double>(real.size()) /
                                                 static_cast<double>(spread))]);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

void reference(const GmmSpec& s, const TensorMap& in, TensorMap& out, bool every_row) {
  const Tensor& act = in.at(s.act_name());
  const Tensor& w = in.at(s.weight_name());
  const auto* o = in.at("offsets").data<std::int32_t>();
  const float* rw = s.routed_weight ? in.at("row_weight").data<float>() : nullptr;
  Tensor& y = out.at(s.out_name());
  const std::int64_t R = act.shape()[0], K = s.k_dim(), NW = s.n_w(), NO = s.n_out(), I = s.intermediate;
  const DType dt = s.dtype;
  const int threads = ref_threads();

  bool all = false;
  const auto rows = reference_rows(s, in, &all, every_row);
  if (s.fp8) return reference_fp8(s, in, out, rows);
  // Rows left out hold NaN (never a plausible result), padding rows their exact zero.
  const bool sampled = static_cast<std::int64_t>(rows.size()) != R;
  const Tensor* bias = s.biased() ? &in.at(s.bias_name()) : nullptr;
  // A bias would make a padding row non-zero: padding rows are zero by definition, not by arithmetic.
  const std::vector<char> pad = sampled || bias ? zero_rows(act) : std::vector<char>();
  if (sampled)
    for (std::int64_t i = 0; i < y.numel(); ++i) y.set(i, std::numeric_limits<double>::quiet_NaN());
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(pad.size()); ++r)
    if (pad[r])
      for (std::int64_t j = 0; j < NO; ++j) y.set(r * NO + j, 0.0);
  // Where gate column j and up column j lie in w13 (and bias13).
  const std::int64_t blk = s.w13_block;
  const auto gate_row = [&](std::int64_t j) { return s.interleaved ? (j / blk) * 2 * blk + j % blk : j; };
  const auto up_row = [&](std::int64_t j) { return s.interleaved ? gate_row(j) + blk : I + j; };

  // Each expert's weights as exact numbers, once: floats for bf16/f16, dequantized doubles for
  // the 4-bit formats (w4.cpp).
  std::vector<float> wf, af;
  std::vector<double> wd;
  const auto* ap = act.data<std::uint16_t>();
  const DType adt = s.w4() ? DType::bf16 : dt;
  auto row_it = rows.begin();
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    auto row_end = std::lower_bound(row_it, rows.end(), std::int64_t{o[e + 1]});
    const std::vector<std::int64_t> mine(row_it, row_end);
    row_it = row_end;
    if (mine.empty()) continue;
    if (s.w4()) {
      wd.resize(static_cast<std::size_t>(NW * K));
      parallel_for(NW, threads, 16, [&](std::int64_t b, std::int64_t x) {
        for (std::int64_t n = b; n < x; ++n) w4_dequant_row(s, in, e, n, wd.data() + n * K);
      });
    } else {
      wf.resize(static_cast<std::size_t>(NW * K));
      const std::uint16_t* we = w.data<std::uint16_t>() + e * NW * K;
      parallel_for(NW, threads, 16, [&](std::int64_t b, std::int64_t x) {
        for (std::int64_t i = b * K; i < x * K; ++i) wf[i] = to_float(dt, we[i]);
      });
    }
    af.resize(mine.size() * static_cast<std::size_t>(K));
    for (std::size_t i = 0; i < mine.size(); ++i)
      for (std::int64_t k = 0; k < K; ++k) af[i * K + k] = to_float(adt, ap[mine[i] * K + k]);
    const auto wdot = [&](const float* a, std::int64_t n) {
      return s.w4() ? dot(a, wd.data() + n * K, K) : dot(a, wf.data() + n * K, K);
    };

    parallel_for(NO, threads, 8, [&](std::int64_t jb, std::int64_t je) {
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const float* a = af.data() + i * K;
        const std::int64_t r = mine[i];
        if (bias && pad[r]) continue;
        for (std::int64_t j = jb; j < je; ++j) {
          double v;
          if (!s.down) {
            double g = wdot(a, gate_row(j)), u = wdot(a, up_row(j));
            if (bias) {
              g += bias->get(e * NW + gate_row(j));
              u += bias->get(e * NW + up_row(j));
            }
            v = s.swiglu_oai ? swiglu_oai(g, u, s.alpha, s.limit) : silu(g) * u;
          } else {
            v = wdot(a, j);
            if (bias) v += bias->get(e * NO + j);
            if (rw) v *= rw[r];
          }
          y.set(r * NO + j, v);
        }
      }
    });
  }
}

}  // namespace moe::gmm
