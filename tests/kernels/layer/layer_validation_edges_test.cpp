// The layer validator at the edges of its tolerances (layer/family.hpp): per dtype, the
// sampled tokens of out rejected just past the element and relative-L2 bounds and accepted just
// inside; a token the reference leaves uncomputed must still be written and finite.
#include <gtest/gtest.h>

#include <cmath>

#include "common/validate.hpp"
#include "layer/family.hpp"
#include "support/prepared_problems.hpp"
#include "support/tolerance_edges.hpp"

namespace {

using namespace moe;

Params layer_problem(const std::string& dtype) {
  // More tokens than the reference samples, so some rows of its out are NaN (not computed).
  return Params{{"tokens", std::int64_t{24}},   {"dtype", dtype},        {"experts", std::int64_t{8}},
                {"topk", std::int64_t{2}},      {"shared", std::int64_t{1}}, {"groups", std::int64_t{2}},
                {"topk_group", std::int64_t{1}}, {"scoring", std::string("sigmoid")}, {"bias", std::int64_t{1}},
                {"rsf", 2.5},                   {"hidden", std::int64_t{64}}, {"intermediate", std::int64_t{32}},
                {"align", std::int64_t{4}}};
}

TEST(LayerValidationEdges, OutPerDtype) {
  for (const char* dt : {"bf16", "f16"}) {
    SCOPED_TRACE(dt);
    const auto p = moe::testing::prepare_seeded(layer_family(), layer_problem(dt), {}, "uniform", 71);
    // What a kernel returns: the reference where it computed, any finite value elsewhere.
    Tensor base = p.reference.at("out");
    std::int64_t uncomputed = -1;
    for (std::int64_t i = 0; i < base.numel(); ++i)
      if (std::isnan(base.get(i))) base.set(i, 0.0), uncomputed = i;
    ASSERT_GE(uncomputed, 0) << "the reference computed every token: the problem no longer samples";
    const DType t = parse_dtype(dt);
    moe::testing::expect_float_edges(p, "out", base, kLayerRelL2Factor * rel_l2_tolerance(t), kLayerRtol, kLayerAtol,
                                "out (");
    // The layer's bound is loose on purpose (errors compound over the stages), but not this loose.
    moe::testing::expect_gross_errors_rejected(p, "out", base, 0.5, 0.1, "out (");
    Tensor inf = base;
    inf.set(uncomputed, INFINITY);  // an uncomputed token must still be finite
    moe::testing::expect_rejects(moe::testing::judge(p, "out", inf), "out (every token written");
  }
}

}  // namespace
