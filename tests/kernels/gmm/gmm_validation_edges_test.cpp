// The gmm validator at the edges of its tolerances (gmm/detail.hpp): per dtype and stage, h
// and y_sorted rejected just past the element bound elem_rtol * (|ref| + rms) and the
// relative-L2 bound, accepted just inside.
#include <gtest/gtest.h>

#include <cmath>

#include "common/validate.hpp"
#include "gmm/detail.hpp"
#include "moe/family.hpp"
#include "support/gmm_problems.hpp"
#include "support/prepared_problems.hpp"
#include "support/tolerance_edges.hpp"

namespace {

using namespace moe;

double rms(const Tensor& t) {
  double sq = 0;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (std::isfinite(t.get(i))) sq += t.get(i) * t.get(i), ++n;
  return n ? std::sqrt(sq / static_cast<double>(n)) : 0.0;
}

TEST(GmmValidationEdges, HAndYSortedPerDtype) {
  for (const char* dt : {"bf16", "f16"})
    for (const char* stage : {"up", "down"}) {
      SCOPED_TRACE(std::string(dt) + " " + stage);
      const Params prob = moe::testing::gmm_problem(24, 6, 2, 1, 64, 48, 4, stage, dt);
      const auto p = moe::testing::prepare_seeded(family("gmm"), prob, {}, "uniform", 61);
      const std::string name = std::string(stage) == "up" ? "h" : "y_sorted";
      const Tensor& ref = p.reference.at(name);
      const double rtol = gmm::elem_rtol(parse_dtype(dt));
      moe::testing::expect_float_edges(p, name, ref, rel_l2_tolerance(parse_dtype(dt)), rtol, rtol * rms(ref), name);
      moe::testing::expect_gross_errors_rejected(p, name, ref, 0.1, 0.05, name);
    }
}

}  // namespace
