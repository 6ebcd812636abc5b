// The combine validator at the edges of its tolerances (combine_tolerance): per dtype, out and
// residual_out each rejected just past the element and relative-L2 bounds, accepted just inside,
// and errors no rounding explains rejected whatever the constants say.
#include <gtest/gtest.h>

#include "combine/family.hpp"
#include "support/prepared_problems.hpp"
#include "support/tolerance_edges.hpp"

namespace {

using namespace moe;

tuner::Prepared rmsnorm_problem(const std::string& dtype, const std::string& out_dtype) {
  const Params p{{"tokens", std::int64_t{24}}, {"experts", std::int64_t{8}}, {"topk", std::int64_t{2}},
                 {"shared", std::int64_t{1}},  {"hidden", std::int64_t{256}}, {"dtype", dtype},
                 {"layout", std::string("ragged")}, {"out_dtype", out_dtype}, {"epilogue", std::string("rmsnorm")},
                 {"align", std::int64_t{4}}};
  return moe::testing::prepare_seeded(combine_family(), p, {}, "uniform", 31);
}

TEST(CombineValidationEdges, OutAndResidualPerDtype) {
  for (const char* dt : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(dt);
    const auto p = rmsnorm_problem(dt, "same");
    const CombineTolerance t = combine_tolerance(parse_dtype(dt));
    for (const char* name : {"out", "residual_out"}) {
      moe::testing::expect_float_edges(p, name, p.reference.at(name), t.rel_l2, t.rtol, t.atol, name);
      // bf16's ulp is under 1% of a value: 10% in one element, 5% in all, is a wrong kernel.
      moe::testing::expect_gross_errors_rejected(p, name, p.reference.at(name), 0.1, 0.05, name);
    }
  }
}

TEST(CombineValidationEdges, WeightedSumInF32FromBf16) {
  // Without the epilogue, out is judged in its own dtype, not the inputs'.
  Params q{{"tokens", std::int64_t{24}}, {"experts", std::int64_t{8}}, {"topk", std::int64_t{2}},
           {"shared", std::int64_t{0}},  {"hidden", std::int64_t{256}}, {"dtype", std::string("bf16")},
           {"out_dtype", std::string("f32")}, {"align", std::int64_t{4}}};
  const auto p = moe::testing::prepare_seeded(combine_family(), q, {}, "uniform", 32);
  const CombineTolerance t = combine_tolerance(DType::f32);
  moe::testing::expect_float_edges(p, "out", p.reference.at("out"), t.rel_l2, t.rtol, t.atol, "out");
  moe::testing::expect_gross_errors_rejected(p, "out", p.reference.at("out"), 0.1, 0.05, "out");
}

}  // namespace
