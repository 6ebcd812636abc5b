// The moe-layer with 4-bit expert weights (docs/w4.md) on the cpu backend: gmm takes the packed
// tensors (codes, scales, int4's zero points), the other stages stay bf16, and the chained
// stages match the chained references, with the plain expert function and with gpt-oss's (the
// emu layer's refusal: tests/app/cli_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace {

moe::Params w4_layer(std::int64_t tokens, const std::string& dtype) {
  return moe::Params{{"tokens", tokens},          {"dtype", dtype},            {"experts", std::int64_t{12}},
                     {"topk", std::int64_t{3}},   {"shared", std::int64_t{1}}, {"scoring", std::string("sigmoid")},
                     {"bias", std::int64_t{1}},   {"rsf", 2.5},                {"hidden", std::int64_t{256}},
                     {"intermediate", std::int64_t{96}}, {"align", std::int64_t{8}}, {"group", std::int64_t{32}}};
}

TEST(LayerW4, CpuMatchesChainedReferences) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dt : {"mxfp4", "int4"})
    for (std::int64_t zp : {0, 1})
      for (std::int64_t T : {1, 21}) {
        if (std::string(dt) == "mxfp4" && zp) continue;
        moe::Params L = w4_layer(T, dt);
        L.set("zero_point", zp);
        moe::InputOptions opt;
        opt.seed = 500 + T;
        const auto p = moe::tuner::prepare(f, L, opt);
        const bool mx = std::string(dt) == "mxfp4";
        EXPECT_EQ(p.inputs.at("w13").dtype(), mx ? moe::DType::u8 : moe::DType::i32);
        EXPECT_EQ(p.inputs.at("w13").shape(), (moe::Shape{13, 192, mx ? 128 : 32}));
        EXPECT_EQ(p.inputs.at("w2_scale").shape(), (moe::Shape{13, 256, 3}));
        EXPECT_EQ(p.inputs.count("w2_zero"), zp ? 1u : 0u);
        EXPECT_EQ(p.reference.at("out").dtype(), moe::DType::bf16);
        for (const auto& s : moe::layer_stages(p.problem))
          if (s.family != "gmm" && s.problem.has("dtype")) EXPECT_EQ(s.problem.s("dtype"), "bf16") << s.name;
        const auto cfg = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, moe::cpu_device_info(2));
        auto o = moe::tuner::run_cpu(p, cfg, 2);
        EXPECT_TRUE(o.validation.ok) << dt << " zp" << zp << " T=" << T << " " << o.validation.summary();
        // A token a tenth off fails (token 0: always among those checked).
        moe::Tensor& out = o.outputs.at("out");
        for (std::int64_t d = 0; d < 256; ++d) out.set(d, out.get(d) * 1.1 + 0.05);
        EXPECT_FALSE(f.validate(p.problem, p.inputs, o.outputs, p.reference).ok) << dt << " T=" << T;
      }
}

// gpt-oss's layer on 4-bit weights: clamped SwiGLU (a limit low enough to clamp often),
// interleaved w13 and both biases; the biases are inputs of the layer and reach its gmm stages.
TEST(LayerW4, GptOssExpertFunctionMatchesChainedReferences) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dt : {"mxfp4", "int4"})
    for (std::int64_t T : {1, 13}) {
      moe::Params L = w4_layer(T, dt);
      L.set("activation", std::string("swiglu_oai")).set("alpha", 1.702).set("limit", 1.5);
      L.set("w13_layout", std::string("interleaved")).set("w13_block", std::int64_t{1});
      L.set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
      moe::InputOptions opt;
      opt.seed = 700 + T;
      const auto p = moe::tuner::prepare(f, L, opt);
      EXPECT_EQ(p.inputs.at("bias13").shape(), (moe::Shape{13, 192}));
      EXPECT_EQ(p.inputs.at("bias2").shape(), (moe::Shape{13, 256}));
      const auto cfg = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, {}, moe::cpu_device_info(2));
      auto o = moe::tuner::run_cpu(p, cfg, 2);
      EXPECT_TRUE(o.validation.ok) << dt << " T=" << T << " " << o.validation.summary();
      // The same outputs judged against a layer without bias2 fail: the bias is in the result.
      moe::Params plain = p.problem;
      plain.set("bias2", std::int64_t{0});
      moe::TensorMap in = p.inputs;
      in.erase("bias2");
      const auto q = moe::tuner::prepare(f, plain, opt, in);
      EXPECT_FALSE(f.validate(q.problem, q.inputs, o.outputs, q.reference).ok) << dt << " T=" << T;
    }
}

}  // namespace
