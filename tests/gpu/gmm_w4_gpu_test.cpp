// The 4-bit kernel and the expert-function instantiations on the GPU, through the harness (the
// path `run` and `sweep` take: inputs uploaded, outputs poisoned, one call, validated against
// the fp64 reference): every config of the full space for mxfp4 and int4 (zero points, groups
// 32 and 128), decode and prefill row counts, gpt-oss's clamped SwiGLU on interleaved w13 with
// both biases on 4-bit and bf16 weights, and gpt-oss's layer on both paths. Skipped where no
// device is visible; written without a GPU at hand, so each failure names problem and config.
#include <gtest/gtest.h>

#include <string>

#include "gmm/family.hpp"
#include "moe/cuda_device.hpp"
#include "require_gpu.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_problem;
using testing::seeded;

Params w4(const std::string& dtype, std::int64_t group, bool zp, std::int64_t T, const std::string& stage) {
  Params p = gmm_problem(T, 16, 4, 0, 512, 256, 16, stage, dtype);
  if (dtype == "int4") p.set("group", group).set("zero_point", std::int64_t{zp ? 1 : 0});
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return p;
}

Params gpt_oss_fn(Params p) {
  return p.set("activation", std::string("swiglu_oai")).set("limit", 1.5).set("w13_layout", std::string("interleaved"))
      .set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
}

class GmmW4Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    dev = cuda_device_info(0);
  }
  // Every config of the cuda space must validate; the failures are listed.
  void all_pass(const Params& pr, std::uint64_t seed, std::size_t at_least) {
    const FamilyDesc& f = gmm_family();
    const tuner::Prepared p = tuner::prepare(f, pr, seeded(seed));
    const auto space = f.need_backend(Backend::cuda).space(p.problem, dev, true);
    EXPECT_GE(space.size(), at_least) << p.problem.str();
    std::string fails;
    for (const Params& c : space) {
      try {
        const auto o = tuner::run_cuda(p, tuner::complete_config(f, Backend::cuda, p.problem, c, dev), dev);
        if (!o.validation.ok) fails += p.problem.str() + " " + c.str() + ": " + o.validation.summary() + "\n";
      } catch (const std::exception& e) {
        fails += p.problem.str() + " " + c.str() + " threw: " + e.what() + "\n";
      }
    }
    EXPECT_TRUE(fails.empty()) << fails;
  }
  DeviceInfo dev;
};

TEST_F(GmmW4Gpu, EveryConfigEveryFormatDecodeAndPrefill) {
  struct Format {
    const char* dtype;
    std::int64_t group;
    bool zp;
  };
  std::uint64_t seed = 1;
  for (const Format& fm : {Format{"mxfp4", 32, false}, Format{"int4", 32, false}, Format{"int4", 128, true}})
    for (const char* stage : {"up", "down"})
      for (std::int64_t T : {1, 16, 512}) all_pass(w4(fm.dtype, fm.group, fm.zp, T, stage), ++seed, 4);
}

TEST_F(GmmW4Gpu, GptOssExpertFunctionOn4BitAndBf16Weights) {
  std::uint64_t seed = 40;
  for (const char* dtype : {"mxfp4", "bf16"})
    for (const char* stage : {"up", "down"})
      for (std::int64_t T : {1, 16, 512}) all_pass(gpt_oss_fn(w4(dtype, 32, false, T, stage)), ++seed, 2);
}

TEST_F(GmmW4Gpu, GptOssLayerOnBothPaths) {
  const FamilyDesc& L = family("moe-layer");
  for (const char* dtype : {"mxfp4", "bf16"})
    for (const char* path : {"stages", "decode"}) {
      Params pr{{"tokens", std::int64_t{8}},  {"experts", std::int64_t{32}},   {"topk", std::int64_t{4}},
                {"hidden", std::int64_t{2880}}, {"intermediate", std::int64_t{128}}, {"dtype", std::string(dtype)},
                {"renormalize", std::int64_t{1}}};
      gpt_oss_fn(pr);
      const tuner::Prepared p = tuner::prepare(L, pr, seeded(60));
      Params c;
      c.set("path", std::string(path));
      const auto o = tuner::run_cuda(p, tuner::complete_config(L, Backend::cuda, p.problem, c, dev), dev);
      EXPECT_TRUE(o.validation.ok) << dtype << " " << path << ": " << o.validation.summary();
    }
}

}  // namespace
}  // namespace moe
