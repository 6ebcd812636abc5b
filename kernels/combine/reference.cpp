// The definition of combine: fp64 sums of the selected rows, then the optional epilogue.
#include <cmath>
#include <vector>

#include "combine/backends.hpp"
#include "moe/error.hpp"

namespace moe {

void combine_reference(const CombineSpec& s, const TensorMap& in, TensorMap& out) {
  const Tensor& w = in.at("weights");
  const Tensor& y = in.at(s.dense ? "y" : "y_sorted");
  const std::int64_t R = s.dense ? s.slots() : y.shape()[0];
  Tensor& o = out.at("out");
  std::vector<double> acc(s.D);
  for (std::int64_t t = 0; t < s.T; ++t) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t j = 0; j < s.K; ++j) {
      const std::int64_t f = t * s.K + j;
      const double wf = w.get(f);
      const std::int64_t row = s.dense ? f : static_cast<std::int64_t>(in.at("dst").data<std::int32_t>()[f]);
      if (row < 0 || row >= R || wf == 0) continue;  // selected away, never multiplied
      for (std::int64_t d = 0; d < s.D; ++d) acc[d] += wf * y.get(row * s.D + d);
    }
    if (!s.rmsnorm) {
      for (std::int64_t d = 0; d < s.D; ++d) o.set(t * s.D + d, acc[d]);
      continue;
    }
    const Tensor& res = in.at("residual");
    const Tensor& gamma = in.at("gamma");
    Tensor& res_out = out.at("residual_out");
    double sumsq = 0;
    for (std::int64_t d = 0; d < s.D; ++d) {
      res_out.set(t * s.D + d, res.get(t * s.D + d) + acc[d]);
      const double r = res_out.get(t * s.D + d);  // the norm sees residual_out as stored
      sumsq += r * r;
    }
    const double inv = 1.0 / std::sqrt(sumsq / static_cast<double>(s.D) + s.eps);
    for (std::int64_t d = 0; d < s.D; ++d) o.set(t * s.D + d, res_out.get(t * s.D + d) * inv * gamma.get(d));
  }
}

}  // namespace moe
