#include "common/validate.hpp"

#include <cmath>
#include <cstring>

#include "moe/error.hpp"

namespace moe {

static std::string where(const Tensor& t, std::int64_t flat) {
  std::string r = "at [";
  std::int64_t rem = flat;
  std::vector<std::int64_t> idx(t.shape().size());
  for (std::size_t d = t.shape().size(); d-- > 0;) {
    idx[d] = t.shape()[d] ? rem % t.shape()[d] : 0;
    rem = t.shape()[d] ? rem / t.shape()[d] : 0;
  }
  for (std::size_t d = 0; d < idx.size(); ++d) r += (d ? "," : "") + std::to_string(idx[d]);
  return r + "]";
}

static void same_layout(const std::string& name, const Tensor& got, const Tensor& ref) {
  if (got.dtype() != ref.dtype() || got.shape() != ref.shape())
    throw Error("validate '" + name + "': got " + std::string(dtype_name(got.dtype())) + shape_str(got.shape()) +
                ", reference " + std::string(dtype_name(ref.dtype())) + shape_str(ref.shape()));
}

Check compare_exact(const std::string& name, const Tensor& got, const Tensor& ref) {
  same_layout(name, got, ref);
  Check c;
  c.tensor = name;
  const std::size_t es = dtype_size(got.dtype());
  auto* g = static_cast<const unsigned char*>(got.raw());
  auto* r = static_cast<const unsigned char*>(ref.raw());
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    if (std::memcmp(g + i * es, r + i * es, es) == 0) continue;
    const bool unwritten = is_poison(got.dtype(), g + i * es);
    (unwritten ? c.unwritten : c.mismatches)++;
    if (c.detail.empty())
      c.detail = where(got, i) + (unwritten ? " never written" : " got " + std::to_string(got.get(i)) +
                                                                    " want " + std::to_string(ref.get(i)));
  }
  c.ok = c.mismatches == 0 && c.unwritten == 0;
  return c;
}

Check compare_close(const std::string& name, const Tensor& got, const Tensor& ref, double rel_l2_tol,
                    double elem_rtol, double elem_atol) {
  same_layout(name, got, ref);
  Check c;
  c.tensor = name;
  c.tolerance = rel_l2_tol;
  const std::size_t es = dtype_size(got.dtype());
  auto* g = static_cast<const unsigned char*>(got.raw());
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    if (is_poison(got.dtype(), g + i * es)) {
      if (!c.unwritten && c.detail.empty()) c.detail = where(got, i) + " never written";
      ++c.unwritten;
      continue;
    }
    const double a = got.get(i), b = ref.get(i);
    if (std::isnan(b) && std::isnan(a)) continue;
    if (std::isnan(a) || std::isnan(b)) {
      ++c.nans;
      if (c.detail.empty()) c.detail = where(got, i) + " got " + std::to_string(a) + " want " + std::to_string(b);
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) {
        ++c.mismatches;
        if (c.detail.empty()) c.detail = where(got, i) + " got " + std::to_string(a) + " want " + std::to_string(b);
      }
      continue;
    }
    const double d = std::fabs(a - b);
    num += d * d;
    den += b * b;
    c.max_abs = std::max(c.max_abs, d);
    if (b != 0) c.max_rel = std::max(c.max_rel, d / std::fabs(b));
    if (d > elem_atol + elem_rtol * std::fabs(b)) {
      ++c.mismatches;
      if (c.detail.empty()) c.detail = where(got, i) + " got " + std::to_string(a) + " want " + std::to_string(b);
    }
  }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  c.ok = c.unwritten == 0 && c.nans == 0 && c.mismatches == 0 && c.rel_l2 <= rel_l2_tol;
  if (c.ok == false && c.detail.empty()) c.detail = "relative L2 error above " + std::to_string(rel_l2_tol);
  return c;
}

double rel_l2_tolerance(DType t) {
  switch (t) {
    case DType::bf16: return 1e-2;
    case DType::f16: return 2e-3;
    default: return 1e-5;
  }
}

Validation make_validation(std::vector<Check> checks) {
  Validation v;
  v.checks = std::move(checks);
  for (auto& c : v.checks) v.ok = v.ok && c.ok;
  return v;
}

}  // namespace moe
