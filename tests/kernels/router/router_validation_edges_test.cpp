// The router validator at the edges of its tolerances (router/validate.hpp): weights rejected
// just past kWeightRtol and accepted just inside, per logits dtype; ids with the k-th expert
// swapped for the next one, accepted when their selection scores differ by 0.1x the near-tie
// band and rejected at 10x, and rejected at 256 ulps whatever the band.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "router/family.hpp"
#include "router/reference.hpp"
#include "router/validate.hpp"
#include "support/prepared_problems.hpp"
#include "support/router_cases.hpp"
#include "support/tolerance_edges.hpp"

namespace {

using namespace moe;
using namespace moe::router;

constexpr std::int64_t kE = 16, kTopk = 4;
constexpr double kRsf = 2.5;

Params edge_problem(const std::string& dtype) {
  return router_cases::with(router_cases::problem(kE, kTopk, 1, 1, 1, "sigmoid", 1, 1, kRsf), 8, dtype);
}

TEST(RouterValidationEdges, WeightsPerDtype) {
  for (const char* dt : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(dt);
    const auto p = moe::testing::prepare_seeded(router_family(), edge_problem(dt), {}, "uniform", 41);
    moe::testing::expect_float_edges(p, "weights", p.reference.at("weights"), kWeightRtol, kWeightRtol,
                                kWeightAtol * std::max(1.0, kRsf), "weights");
    // fp32 weights off by 0.1%: thousands of ulps, a wrong kernel whatever the constants say.
    moe::testing::expect_gross_errors_rejected(p, "weights", p.reference.at("weights"), 1e-3, 1e-3, "weights");
  }
}

struct RowScores {
  std::vector<float> s, c;
  double mag(const float* bias, std::int64_t e) const { return std::fabs(s[e]) + std::fabs(bias[e]); }
};

RowScores scores_of(const RouterSpec& sp, const TensorMap& in, std::int64_t t) {
  RowScores r{std::vector<float>(kE), std::vector<float>(kE)};
  std::vector<float> x(kE);
  load_row(in.at("logits"), t, x.data());
  row_scores(sp, x.data(), in.at("bias").data<float>(), r.s.data(), r.c.data());
  return r;
}

// Moves the best unchosen expert b of row 0 to a relative gap `rel` below the k-th chosen
// expert a (by its bias), then returns the validation of the reference with a and b
// exchanged in row 0 and the weights b deserves. `landed`: the gap actually made, in bands.
Validation judge_swap_at(const std::string& dtype, double rel, double& landed) {
  const Params prob = edge_problem(dtype);
  auto p = moe::testing::prepare_seeded(router_family(), prob, {}, "uniform", 43);
  const RouterSpec sp = RouterSpec::from(p.problem);
  TensorMap in = p.inputs;
  float* bias = in.at("bias").data<float>();
  RowScores r = scores_of(sp, in, 0);
  const auto* ids = p.reference.at("ids").data<std::int32_t>();
  const std::int32_t a = ids[kTopk - 1];
  std::int32_t b = -1;
  for (std::int32_t e = 0; e < kE; ++e)
    if (std::find(ids, ids + kTopk, e) == ids + kTopk && (b < 0 || ranks_before(r.c.data(), e, b))) b = e;
  // The band is relative to the larger magnitude of the two, which the new bias changes: settle it twice.
  for (int i = 0; i < 2; ++i) {
    const double gap = rel * std::max(r.mag(bias, a), r.mag(bias, b));
    bias[b] = static_cast<float>(double(r.c[a]) - gap - double(r.s[b]));
    r = scores_of(sp, in, 0);
  }
  // A tenth of the band is under an ulp of c: where it rounded to an exact tie, one ulp down.
  while (!(r.c[b] < r.c[a])) {
    bias[b] -= std::nextafter(r.c[a], INFINITY) - r.c[a];
    r = scores_of(sp, in, 0);
  }
  landed = (double(r.c[a]) - double(r.c[b])) / (kNearTie * std::max(r.mag(bias, a), r.mag(bias, b)));

  auto q = moe::testing::prepare_raw(router_family(), p.problem, in);
  TensorMap got = q.reference;
  std::int32_t* g = got.at("ids").data<std::int32_t>();
  EXPECT_EQ(g[kTopk - 1], a) << "the nudge changed the reference's choice";
  g[kTopk - 1] = b;
  routed_weights(sp, r.s.data(), g, got.at("weights").data<float>());
  return router_family().validate(q.problem, q.inputs, got, q.reference);
}

TEST(RouterValidationEdges, NearTieBandAtATenthAndTenTimesItsWidth) {
  for (const char* dt : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(dt);
    double landed = 0;
    const Validation inside = judge_swap_at(dt, 0.1 * kNearTie, landed);
    ASSERT_GT(landed, 0.0) << "the gap rounded to an exact tie";
    ASSERT_LT(landed, 0.5) << "the gap is not well inside the band";
    moe::testing::expect_accepts(inside, "a swap 0.1x the near-tie band apart");
    EXPECT_NE(inside.checks[0].detail.find("near-ties"), std::string::npos) << inside.summary();
    const Validation past = judge_swap_at(dt, 10 * kNearTie, landed);
    ASSERT_GT(landed, 5.0);
    ASSERT_LT(landed, 20.0);
    moe::testing::expect_rejects(past, "ids");
  }
}

TEST(RouterValidationEdges, ScoresHundredsOfUlpsApartAreNeverATie) {
  // exp and sigmoid differ across devices by a few ulps; 256 ulps apart is a routing error,
  // whatever band the validator is given.
  double landed = 0;
  moe::testing::expect_rejects(judge_swap_at("f32", 256 * FLT_EPSILON, landed), "ids");
}

}  // namespace
