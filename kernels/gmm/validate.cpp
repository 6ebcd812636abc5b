#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/validate.hpp"
#include "gmm/detail.hpp"

namespace moe::gmm {

namespace {

Tensor take_rows(const Tensor& t, const std::vector<std::int64_t>& rows) {
  const std::int64_t C = t.shape()[1];
  const std::size_t es = dtype_size(t.dtype());
  Tensor r(t.dtype(), {static_cast<std::int64_t>(rows.size()), C});
  auto* dst = static_cast<unsigned char*>(r.raw());
  const auto* src = static_cast<const unsigned char*>(t.raw());
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy(src + rows[i] * C * es, src + (rows[i] + 1) * C * es, dst + i * C * es);
  return r;
}

// compare_close names positions in the sampled sub-tensor: say which row of the output it is.
void fix_row_in_detail(std::string& detail, const std::vector<std::int64_t>& rows) {
  long i = 0;
  int used = 0;
  if (std::sscanf(detail.c_str(), "at [%ld%n", &i, &used) != 1 || i < 0 || static_cast<std::size_t>(i) >= rows.size())
    return;
  detail = "at [" + std::to_string(rows[static_cast<std::size_t>(i)]) + detail.substr(static_cast<std::size_t>(used));
}

}  // namespace

// Two roundings of nearly the same value (fp32 sums vs fp64) differ by at most one ulp,
// 2^-7 of |v| in bf16, 2^-10 in f16; a few ulps of slack on top. The 4-bit formats take bf16's:
// every dequantized weight (an e2m1 value times a power of two, or a 4-bit integer times a
// bf16 scale) is exact in fp32 as in fp64, so only the sums' order and the bf16 rounding of the
// output separate a backend from the reference, as for bf16 weights.
double elem_rtol(DType t) { return t == DType::bf16 ? 1.0 / 64 : 1.0 / 512; }

Validation validate(const GmmSpec& s, const TensorMap& in, const TensorMap& got_map, const TensorMap& ref_map) {
  if (s.fp8 && !s.down) return validate_fp8_up(s, in, got_map, ref_map);
  const std::string name = s.out_name();
  const Tensor& got = got_map.at(name);
  const Tensor& ref = ref_map.at(name);
  std::vector<Check> checks;
  if (got.shape() != ref.shape() || got.dtype() != ref.dtype()) {
    Check c;
    c.tensor = name;
    c.ok = false;
    c.detail = "got " + std::string(dtype_name(got.dtype())) + shape_str(got.shape()) + ", want " +
               std::string(dtype_name(ref.dtype())) + shape_str(ref.shape());
    return make_validation({c});
  }
  const std::int64_t R = got.shape()[0], C = got.shape()[1];
  bool all = false;
  const auto rows = reference_rows(s, in, &all);
  std::vector<char> sampled(static_cast<std::size_t>(R), 0);
  for (auto r : rows) sampled[r] = 1;
  const auto pad = zero_rows(in.at(s.act_name()));

  // Every row: written, finite where the reference did not look, exactly zero on padding.
  Check rowc;
  rowc.tensor = name + " (padding rows exactly 0, every row written)";
  const auto* g = got.data<std::uint16_t>();
  for (std::int64_t r = 0; r < R; ++r) {
    for (std::int64_t j = 0; j < C; ++j) {
      const std::int64_t i = r * C + j;
      const bool poison = is_poison(got.dtype(), g + i);
      const double v = poison ? 0.0 : got.get(i);
      std::string bad;
      if (!sampled[r] && poison) {
        ++rowc.unwritten;
        bad = " never written";
      } else if (!sampled[r] && !std::isfinite(v)) {
        ++rowc.nans;
        bad = " is " + std::to_string(v);
      } else if (pad[r] && !poison && !std::isnan(v) && v != 0.0) {
        ++rowc.mismatches;
        bad = " is " + std::to_string(v) + " on a padding (all-zero input) row, want exactly 0";
      }
      if (!bad.empty() && rowc.detail.empty())
        rowc.detail = "at [" + std::to_string(r) + "," + std::to_string(j) + "]" + bad;
    }
  }
  rowc.ok = rowc.unwritten == 0 && rowc.nans == 0 && rowc.mismatches == 0;
  checks.push_back(rowc);

  // The rows the reference computed: close in relative L2 and per element.
  const Tensor gs = all && static_cast<std::int64_t>(rows.size()) == R ? Tensor() : take_rows(got, rows);
  const Tensor rs = all && static_cast<std::int64_t>(rows.size()) == R ? Tensor() : take_rows(ref, rows);
  const Tensor& gc = gs.shape().empty() ? got : gs;
  const Tensor& rc = rs.shape().empty() ? ref : rs;
  double sq = 0;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < rc.numel(); ++i) {
    const double v = rc.get(i);
    if (std::isfinite(v)) sq += v * v, ++n;
  }
  const double rms = n ? std::sqrt(sq / static_cast<double>(n)) : 0.0;
  const double rtol = elem_rtol(s.out_dtype());
  Check close = compare_close(gs.shape().empty() ? name : name + " (" + std::to_string(rows.size()) + " of " +
                                                              std::to_string(R) + " rows vs the fp64 reference)",
                              gc, rc, rel_l2_tolerance(s.out_dtype()), rtol, rtol * rms);
  if (!gs.shape().empty()) fix_row_in_detail(close.detail, rows);
  checks.push_back(close);
  return make_validation(std::move(checks));
}

Cost cost(const GmmSpec& s, const TensorMap& in) {
  // FLOPs count the real rows only (padding rows are work the aligner adds, not useful work);
  // bytes count the weights of experts that have rows, every activation row read and written.
  const Tensor& act = in.at(s.act_name());
  const auto pad = zero_rows(act);
  double real = 0;
  for (char p : pad) real += p ? 0 : 1;
  const auto* o = in.at("offsets").data<std::int32_t>();
  double active = 0;
  for (std::int64_t e = 0; e < s.e_local(); ++e) active += o[e + 1] > o[e] ? 1 : 0;
  const double R = static_cast<double>(act.shape()[0]), es = static_cast<double>(s.elem_bytes());
  const double os = static_cast<double>(dtype_size(s.out_dtype()));
  // fp8: a scale per 128 of every activation row, output row (up) and 128x128 weight block.
  const double scales = s.fp8 ? 4.0 * (R * static_cast<double>(s.k_groups() + (s.down ? 0 : s.n_out() / 128)) +
                                       active * static_cast<double>(s.n_w() / 128 * s.k_groups()))
                              : 0.0;
  Cost c;
  c.flops = 2.0 * real * static_cast<double>(s.k_dim()) * static_cast<double>(s.n_w());
  c.bytes = active * static_cast<double>(s.weight_bytes_per_expert()) + R * static_cast<double>(s.k_dim()) * es +
            R * static_cast<double>(s.n_out()) * os + static_cast<double>(s.e_local() + 1) * 4 +
            (s.routed_weight ? R * 4 : 0) + scales +
            (s.biased() ? active * static_cast<double>(s.down ? s.hidden : s.n_w()) * es : 0.0);
  return c;
}

Cost estimate(const GmmSpec& s) {
  // Uniform routing: a token's slots land on local experts in proportion to their share.
  const double es = static_cast<double>(s.elem_bytes());
  const double rows = std::min(static_cast<double>(s.max_rows()), static_cast<double>(s.tokens) * static_cast<double>(s.slots()) *
                                                                     static_cast<double>(s.e_local()) / static_cast<double>(s.e_total()));
  const double active = std::min(static_cast<double>(s.e_local()), std::ceil(rows));
  Cost c;
  c.flops = 2.0 * rows * static_cast<double>(s.k_dim()) * static_cast<double>(s.n_w());
  c.bytes = active * static_cast<double>(s.weight_bytes_per_expert()) +
            rows * (static_cast<double>(s.k_dim()) * es + static_cast<double>(s.n_out() * dtype_size(s.out_dtype())));
  return c;
}

}  // namespace moe::gmm
