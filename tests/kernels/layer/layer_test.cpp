// The moe-layer unit on the cpu backend: the chained stages match the chained references.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "layer/stages.hpp"
#include "moe/family.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"

namespace {

moe::Params small_layer(std::int64_t tokens) {
  return moe::Params{{"tokens", tokens},          {"dtype", std::string("bf16")}, {"experts", std::int64_t{12}},
                     {"topk", std::int64_t{3}},   {"shared", std::int64_t{1}},    {"groups", std::int64_t{4}},
                     {"topk_group", std::int64_t{2}}, {"scoring", std::string("sigmoid")}, {"bias", std::int64_t{1}},
                     {"rsf", 2.5},                {"hidden", std::int64_t{72}},   {"intermediate", std::int64_t{40}},
                     {"align", std::int64_t{8}}};
}

TEST(Layer, CpuMatchesChainedReferences) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (std::int64_t T : {1, 5, 37}) {
    moe::InputOptions opt;
    opt.seed = 100 + T;
    opt.dist = T == 37 ? "zipf" : "uniform";
    const auto p = moe::tuner::prepare(f, small_layer(T), opt);
    const auto dev = moe::cpu_device_info(2);
    const auto cfg = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, dev);
    const auto o = moe::tuner::run_cpu(p, cfg, 2);
    EXPECT_TRUE(o.validation.ok) << "T=" << T << " " << o.validation.summary();
  }
}

// fp8 block-scaled (DESIGN.md 1.6): the stages pass codes and scales along (x_sorted +
// x_scale, h + h_scale), router and combine stay bf16, and the end-to-end bound holds.
TEST(Layer, Fp8CpuMatchesChainedReferences) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* fmt : {"fp32", "ue8m0"})
    for (std::int64_t T : {3, 29}) {
      moe::Params L = small_layer(T);
      L.set("dtype", std::string("fp8")).set("scale_fmt", std::string(fmt));
      L.set("hidden", std::int64_t{256}).set("intermediate", std::int64_t{128});
      moe::InputOptions opt;
      opt.seed = 300 + T;
      const auto p = moe::tuner::prepare(f, L, opt);
      EXPECT_EQ(p.inputs.at("w13").dtype(), moe::DType::e4m3);
      EXPECT_EQ(p.inputs.at("w2_scale").shape(), (moe::Shape{13, 2, 1}));
      EXPECT_EQ(p.reference.at("out").dtype(), moe::DType::bf16);
      const auto cfg = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, moe::cpu_device_info(2));
      auto o = moe::tuner::run_cpu(p, cfg, 2);
      EXPECT_TRUE(o.validation.ok) << fmt << " T=" << T << " " << o.validation.summary();
      // A token a quarter off must fail even the looser bound (token 0: always among those checked).
      moe::Tensor& out = o.outputs.at("out");
      for (std::int64_t d = 0; d < 256; ++d) out.set(d, out.get(d) * 1.25 + 0.5);
      EXPECT_FALSE(f.validate(p.problem, p.inputs, o.outputs, p.reference).ok) << fmt << " T=" << T;
    }
}

// The layer holds its own inputs only, and its weights are the ones its gmm stages would make
// at the layer's token count (made at one token, so no activation is made and thrown away);
// given weights are taken as they are.
TEST(Layer, InputsAreItsOwnAndItsWeightsThoseOfItsGmmStages) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const moe::FamilyDesc& g = moe::family("gmm");
  for (const char* dt : {"bf16", "fp8"}) {
    moe::Params L = small_layer(37);
    L.set("dtype", std::string(dt)).set("hidden", std::int64_t{256}).set("intermediate", std::int64_t{128});
    moe::InputOptions opt;
    opt.seed = 41;
    const auto p = moe::tuner::prepare(f, L, opt);
    std::set<std::string> want, have;
    for (auto& spec : f.input_specs(p.problem)) want.insert(spec.name);
    for (auto& [k, v] : p.inputs) have.insert(k);
    EXPECT_EQ(have, want) << dt;
    const auto stages = moe::layer_stages(p.problem);
    moe::InputOptions o2 = opt;
    o2.seed = opt.seed + 1;
    for (std::size_t i : {std::size_t{2}, std::size_t{3}}) {
      moe::TensorMap stage;
      g.make_inputs(stages[i].problem, o2, stage);
      for (const char* k : {"w13", "w13_scale", "w2", "w2_scale"}) {
        if (!stage.count(k)) continue;
        const moe::Tensor &a = stage.at(k), &b = p.inputs.at(k);
        ASSERT_EQ(a.shape(), b.shape()) << dt << " " << k;
        EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << dt << " " << k;
      }
    }
    moe::TensorMap given;
    given["w2"] = p.inputs.at("w2");
    given["w2"].set(5, 0.125);
    if (std::string(dt) == "fp8") given["w2_scale"] = p.inputs.at("w2_scale");
    const auto q = moe::tuner::prepare(f, L, opt, given);
    EXPECT_EQ(q.inputs.at("w2").get(5), 0.125) << dt;
  }
}

TEST(Layer, ValidationCatchesAWrongToken) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  moe::InputOptions opt;
  opt.seed = 7;
  const auto p = moe::tuner::prepare(f, small_layer(9), opt);
  auto o = moe::tuner::run_cpu(p, moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, moe::cpu_device_info(1)), 1);
  ASSERT_TRUE(o.validation.ok) << o.validation.summary();
  moe::Tensor& out = o.outputs.at("out");
  const std::int64_t D = 72, t = 4;
  for (std::int64_t d = 0; d < D; ++d) out.set(t * D + d, out.get(t * D + d) * 1.5 + 0.25);
  EXPECT_FALSE(f.validate(p.problem, p.inputs, o.outputs, p.reference).ok);
}

TEST(Layer, StageConfigIsUsedAndCheckedByName) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const auto p = moe::tuner::prepare(f, small_layer(4), moe::InputOptions{});
  const auto dev = moe::cpu_device_info(1);
  moe::Params bad{{"router", std::string("no_such_knob=3")}};
  EXPECT_THROW(moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, bad, dev), moe::Error);
}

}  // namespace
