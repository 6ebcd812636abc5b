// The layer under expert parallelism: a rank holds only its experts' weights, dispatch and gmm
// take its slice, and the ranks' outputs add up to the whole layer's (what the all-reduce after
// combine does in an engine).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "common/emu_backend.hpp"
#include "dispatch/spec.hpp"
#include "gmm/spec.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/family.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using moe::Params;
using moe::Tensor;

Params layer(std::int64_t tokens) {
  return Params{{"tokens", tokens},          {"dtype", std::string("bf16")}, {"experts", std::int64_t{12}},
                {"topk", std::int64_t{3}},   {"shared", std::int64_t{1}},    {"groups", std::int64_t{4}},
                {"topk_group", std::int64_t{2}}, {"scoring", std::string("sigmoid")}, {"bias", std::int64_t{1}},
                {"hidden", std::int64_t{64}}, {"intermediate", std::int64_t{48}}, {"align", std::int64_t{4}}};
}

// Experts [begin, end) of a tensor whose first dimension is the expert.
Tensor experts_of(const Tensor& w, std::int64_t begin, std::int64_t end) {
  moe::Shape s = w.shape();
  const std::size_t per = w.nbytes() / static_cast<std::size_t>(s[0]);
  s[0] = end - begin;
  Tensor t(w.dtype(), s);
  std::memcpy(t.raw(), static_cast<const std::byte*>(w.raw()) + begin * per, t.nbytes());
  return t;
}

TEST(LayerEp, RanksHoldTheirSliceAndAddUpToTheWholeLayer) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const auto dev = moe::cpu_device_info(2);
  const Params whole = layer(9);
  const auto full = moe::testing::prepare_seeded(f, whole, {}, "uniform", 41);
  const moe::Tensor& ref = full.reference.at("out");
  std::vector<double> sum_ref(ref.numel(), 0.0), sum_cpu(ref.numel(), 0.0);
  // Uneven slices, the last one holding the shared expert (id 12).
  for (auto [b, e] : {std::pair<std::int64_t, std::int64_t>{0, 4}, {4, 9}, {9, 13}}) {
    Params L = whole;
    L.set("expert_begin", b).set("expert_end", e);
    for (const moe::Stage& s : moe::layer_stages(moe::complete(f.problem_params, L, "moe-layer")))
      if (s.family == "dispatch" || s.family == "gmm") {
        EXPECT_EQ(s.problem.i("expert_begin"), b) << s.name;
        EXPECT_EQ(s.problem.i("expert_end"), e) << s.name;
      }
    moe::TensorMap given;
    for (const char* k : {"logits", "x", "bias"}) given[k] = full.inputs.at(k);
    for (const char* k : {"w13", "w2"}) given[k] = experts_of(full.inputs.at(k), b, e);
    const auto p = moe::testing::prepare_raw(f, L, given);
    EXPECT_EQ(f.input_specs(p.problem)[2].shape[0], e - b) << "w13 holds the local experts only";
    const auto cfg = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, dev);
    const auto o = moe::tuner::run_cpu(p, cfg, 2);
    EXPECT_TRUE(o.validation.ok) << "[" << b << "," << e << ") " << o.validation.summary();
    for (std::int64_t i = 0; i < ref.numel(); ++i) {
      sum_ref[i] += p.reference.at("out").get(i);
      sum_cpu[i] += o.outputs.at("out").get(i);
    }
  }
  // Each rank rounds its partial sum to bf16 once more than the whole layer does.
  double err = 0, norm = 0, err_cpu = 0;
  for (std::int64_t i = 0; i < ref.numel(); ++i) {
    err += std::pow(sum_ref[i] - ref.get(i), 2);
    err_cpu += std::pow(sum_cpu[i] - ref.get(i), 2);
    norm += std::pow(ref.get(i), 2);
  }
  ASSERT_GT(norm, 0);
  EXPECT_LT(std::sqrt(err / norm), 2e-2);
  EXPECT_LT(std::sqrt(err_cpu / norm), 3e-2);
}

// A rank whose tokens have more slots than it has experts: the layer's intermediates, dispatch's
// maps and gmm's tile map must all be sized by the same bound, or the layer's rows outgrow the
// map gmm planned (a 5-token, 4-slot layer over 2 local experts was refused by its own gmm).
TEST(LayerEp, EveryStageSizesByTheLayersRowBound) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (std::int64_t T : {1, 5, 33})
    for (auto [b, e] : {std::pair<std::int64_t, std::int64_t>{0, 2}, {3, 4}, {0, 13}})
      for (std::int64_t A : {1, 4, 16}) {
        Params L = layer(T);
        L.set("expert_begin", b).set("expert_end", e).set("align", A);
        const Params full = moe::complete(f.problem_params, L, "moe-layer");
        const std::int64_t R = moe::layer_max_rows(full);
        for (const moe::Stage& s : moe::layer_stages(full)) {
          if (s.family == "gmm") EXPECT_EQ(moe::GmmSpec::parse(s.problem).max_rows(), R) << s.name;
          if (s.family == "dispatch") EXPECT_EQ(moe::DispatchSpec::parse(s.problem).max_rows(), R) << s.name;
        }
      }
}

// The emulated cuda kernels of that rank, end to end: dispatch writes every slot's row, gmm's
// schedule maps them, and the result matches the reference.
TEST(LayerEp, EmulatedRankWithMoreSlotsThanExpertsValidates) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dtype : {"bf16", "fp8"}) {
    Params L{{"tokens", std::int64_t{5}},   {"dtype", std::string(dtype)}, {"experts", std::int64_t{8}},
             {"topk", std::int64_t{4}},     {"expert_begin", std::int64_t{0}}, {"expert_end", std::int64_t{2}},
             {"hidden", std::int64_t{128}}, {"intermediate", std::int64_t{128}}, {"align", std::int64_t{1}}};
    const auto p = moe::testing::prepare_seeded(f, L, {}, "uniform", 7);
    const auto cfg = moe::tuner::complete_config(f, moe::Backend::emu, p.problem, {}, moe::emu_device_info());
    const auto o = moe::tuner::run_emu(p, cfg);
    EXPECT_TRUE(o.validation.ok) << dtype << ": " << o.validation.summary();
  }
}

}  // namespace
