#pragma once
// Outputs a validator must judge at the edge of its tolerance: the reference nudged to just
// inside or just past a per-element bound (atol + rtol*|ref|) or a relative-L2 bound. The
// nudged value is stored in the tensor's own dtype, so rounding moves it; the helpers report
// where it landed, in units of the bound, and the tests assert that before judging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace moe::testing {

// Index of the finite element of largest magnitude, where rounding is smallest relative to
// the bound (ties: the first); -1 when there is none.
inline std::int64_t largest_finite(const Tensor& t) {
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (std::isfinite(t.get(i)) && (best < 0 || std::fabs(t.get(i)) > std::fabs(t.get(best)))) best = i;
  return best;
}

// Relative L2 distance of `t` from `ref` over the finite elements of ref.
inline double rel_l2_from(const Tensor& t, const Tensor& ref) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < ref.numel(); ++i) {
    const double b = ref.get(i);
    if (!std::isfinite(b)) continue;
    num += (t.get(i) - b) * (t.get(i) - b);
    den += b * b;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A copy of `ref` with element i moved away from zero by `factor` times its element bound;
// `landed` receives the distance actually stored, in units of that bound.
inline Tensor nudge_at(const Tensor& ref, std::int64_t i, double factor, double rtol, double atol, double& landed) {
  Tensor t = ref;
  const double b = ref.get(i), bound = atol + rtol * std::fabs(b);
  t.set(i, b + std::copysign(factor * bound, b == 0 ? 1.0 : b));
  landed = std::fabs(t.get(i) - b) / bound;
  return t;
}

// A copy of `ref` with every finite element scaled by (1 + rel); `landed` receives the
// relative L2 distance actually stored, over the finite elements.
inline Tensor scale_all(const Tensor& ref, double rel, double& landed) {
  Tensor t = ref;
  for (std::int64_t i = 0; i < ref.numel(); ++i)
    if (std::isfinite(ref.get(i))) t.set(i, ref.get(i) * (1 + rel));
  landed = rel_l2_from(t, ref);
  return t;
}

// The validation failed, and a failing check names `tensor` (its name starts with it).
inline void expect_rejects(const Validation& v, const std::string& tensor) {
  EXPECT_FALSE(v.ok) << "accepted an output past the tolerance of " << tensor << ": " << v.summary();
  bool named = false;
  for (const Check& c : v.checks) named = named || (!c.ok && c.tensor.rfind(tensor, 0) == 0);
  EXPECT_TRUE(named) << "the rejection does not name " << tensor << ": " << v.summary();
}

inline void expect_accepts(const Validation& v, const std::string& what) {
  EXPECT_TRUE(v.ok) << "rejected an output inside the tolerance (" << what << "): " << v.summary();
}

// How far past (and short of) a bound the edge tests go: far enough that rounding to the
// dtype cannot carry the value back across the bound, near enough that a validator looser
// than the documented bound by any useful factor accepts what it must reject.
inline constexpr double kJustPast = 1.3;
inline constexpr double kJustInside = 0.7;

// The family's validator on the reference outputs with `name` replaced by `t`.
inline Validation judge(const tuner::Prepared& p, const std::string& name, Tensor t) {
  TensorMap got = p.reference;
  got[name] = std::move(t);
  return p.family->validate(p.problem, p.inputs, got, p.reference);
}

// A float output `name` of a prepared problem, judged at both edges of both bounds: one
// element just past / inside atol + rtol*|ref|, every element scaled just past / inside
// rel_l2. `base` is what a correct kernel returns (the reference, with any element the
// reference leaves uncomputed filled in); the failing check must be named `reported`.
inline void expect_float_edges(const tuner::Prepared& p, const std::string& name, const Tensor& base, double rel_l2,
                               double rtol, double atol, const std::string& reported) {
  SCOPED_TRACE(name + " rel_l2=" + std::to_string(rel_l2) + " rtol=" + std::to_string(rtol) +
               " atol=" + std::to_string(atol));
  expect_accepts(judge(p, name, base), "the reference itself");
  const std::int64_t top = largest_finite(base);
  ASSERT_GE(top, 0) << "no finite element to nudge";
  double landed = 0;
  Tensor t = nudge_at(base, top, kJustPast, rtol, atol, landed);
  ASSERT_GT(landed, 1.0) << "rounding carried the nudge back inside the element bound";
  expect_rejects(judge(p, name, t), reported);
  // Inside the element bound, the one element must not break the relative L2 bound alone
  // (where the element bound is the looser one): the largest element that keeps it inside.
  std::vector<std::int64_t> order;
  for (std::int64_t i = 0; i < base.numel(); ++i)
    if (std::isfinite(base.get(i))) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](auto a, auto b) { return std::fabs(base.get(a)) > std::fabs(base.get(b)); });
  bool found = false;
  for (std::int64_t i : order) {
    t = nudge_at(base, i, kJustInside, rtol, atol, landed);
    if ((found = landed < 1.0 && rel_l2_from(t, base) < kJustInside * rel_l2)) break;
  }
  ASSERT_TRUE(found) << "no element can move inside its bound without breaking the relative L2 bound";
  expect_accepts(judge(p, name, t), "one element inside its bound");
  t = scale_all(base, kJustPast * rel_l2, landed);
  ASSERT_GT(landed, rel_l2) << "rounding carried the scaling back inside the relative L2 bound";
  expect_rejects(judge(p, name, t), reported);
  t = scale_all(base, kJustInside * rel_l2, landed);
  ASSERT_LT(landed, rel_l2) << "rounding carried the scaling past the relative L2 bound";
  expect_accepts(judge(p, name, t), "every element inside the relative L2 bound");
}

// Errors no rounding explains, rejected whatever the tolerance constants say: the edge tests
// above follow the constants, so these are what catch a constant loosened by mistake. One
// element off by `one_rel` of its value, then every element off by `all_rel`.
inline void expect_gross_errors_rejected(const tuner::Prepared& p, const std::string& name, const Tensor& base,
                                         double one_rel, double all_rel, const std::string& reported) {
  SCOPED_TRACE(name + " off by " + std::to_string(one_rel) + " in one element, " + std::to_string(all_rel) + " in all");
  Tensor t = base;
  const std::int64_t i = largest_finite(base);
  ASSERT_GE(i, 0);
  t.set(i, base.get(i) * (1 + one_rel));
  expect_rejects(judge(p, name, t), reported);
  double landed = 0;
  expect_rejects(judge(p, name, scale_all(base, all_rel, landed)), reported);
}

}  // namespace moe::testing
