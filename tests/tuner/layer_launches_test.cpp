// Kernels per layer call as the static report counts them: the cuda layer backend's host code run
// against a recording stand-in for the CUDA runtime. The count is checked against the emulator's
// own launch log of the same call (the emu backend launches the kernel sources one by one), and
// the decode path's promise (front, up, down at decode token counts) on the presets.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/emu_backend.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/problem/layer_launches.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/problem/problem.hpp"

namespace {

using moe::Params;

Params layer_config(const std::string& path, std::int64_t fold, std::int64_t l2) {
  Params c;
  for (const char* k : {"router", "dispatch", "gmm_up", "gmm_down", "combine"}) c.set(k, std::string("auto"));
  return c.set("pdl", std::int64_t{1}).set("path", path).set("front_ctas", std::int64_t{0}).set("fold_combine", fold)
      .set("l2_prefetch", l2);
}

Params small(std::int64_t T, const std::string& dtype) {
  return Params{{"tokens", T},          {"dtype", dtype},       {"experts", std::int64_t{16}}, {"topk", std::int64_t{4}},
                {"hidden", std::int64_t{128}}, {"intermediate", std::int64_t{128}}, {"align", std::int64_t{4}}};
}

TEST(LayerLaunches, CountsWhatTheEmulatorLaunches) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dtype : {"bf16", "fp8"})
    for (const std::int64_t T : {1, 9})
      for (const Params& c : {layer_config("stages", 0, 0), layer_config("decode", 0, 0), layer_config("decode", 1, 2)}) {
        const auto p = moe::testing::prepare_seeded(f, small(T, dtype), {}, "uniform", 7 + T);
        const auto emu = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem, c,
                                                                             moe::emu_device_info()));
        ASSERT_TRUE(emu.validation.ok) << emu.validation.summary();
        const auto counted = moe::tuner::layer_call_launches(p.problem, c);
        EXPECT_EQ(counted.size(), emu.kernels.size()) << dtype << " T=" << T << " " << c.s("path") << " fold "
                                                      << c.i("fold_combine");
        for (const auto& l : counted) EXPECT_GT(l.grid, 0u);
      }
}

TEST(LayerLaunches, InvalidConfigIsAnErrorWithTheReason) {
  const Params L = moe::complete(moe::family("moe-layer").problem_params, small(80, "bf16"), "layer");
  try {
    moe::tuner::layer_call_launches(L, layer_config("decode", 0, 0));
    ADD_FAILURE() << "the decode path counted 80 tokens";
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 64 tokens"), std::string::npos) << e.what();
  }
  // The stand-in runtime is gone after the throw: a count after it still counts.
  EXPECT_GE(moe::tuner::layer_call_launches(L, layer_config("stages", 0, 0)).size(), 5u);
}

// Qwen3-30B-A3B at decode: three kernels with the fold, one per stage kernel without the path.
TEST(LayerLaunches, ReportRowsForAPreset) {
  const auto all = moe::tuner::layer_kernels_per_call();
  int seen = 0;
  for (const auto& r : all.at("rows")) {
    if (r.at("model") != "qwen3-30b-a3b" || r.at("dtype") == "int4" || r.at("dtype") == "mxfp4") continue;
    ++seen;
    for (const auto& c : r.at("calls")) {
      const std::int64_t T = c.at("tokens");
      ASSERT_TRUE(c.contains("kernels")) << r.dump() << " T=" << T;
      if (r.at("path") == "decode") {
        EXPECT_EQ(c.at("fold_combine"), 1) << T;
        EXPECT_EQ(c.at("kernels"), 3) << r.at("dtype") << " T=" << T;
      } else {
        EXPECT_GE(c.at("kernels"), 5) << r.at("dtype") << " T=" << T;
      }
    }
  }
  EXPECT_EQ(seen, 4) << "bf16 and fp8, each on both paths";
}

// The 4-bit checkpoints carry their format in the quantization block, not in dtype: their rows are
// counted too. Kimi-K2-Thinking's int4 decode call walks the front's tile maps (front, up, down,
// combine: down does not fold); gpt-oss's mxfp4 adds a pad-row pass per biased stage.
TEST(LayerLaunches, FourBitPresetsHaveRowsInTheirOwnFormat) {
  const auto all = moe::tuner::layer_kernels_per_call();
  std::map<std::string, int> seen;
  for (const auto& r : all.at("rows")) {
    const std::string model = r.at("model"), dtype = r.at("dtype");
    if (!((model == "kimi-k2-thinking" && dtype == "int4") || (model == "gpt-oss-20b" && dtype == "mxfp4"))) continue;
    ++seen[model];
    for (const auto& c : r.at("calls")) {
      const std::int64_t T = c.at("tokens");
      ASSERT_TRUE(c.contains("kernels")) << r.dump() << " T=" << T;
      if (r.at("path") != "decode") continue;
      EXPECT_EQ(c.at("fold_combine"), 0) << model << " T=" << T;
      EXPECT_NE(c.value("not_folded", "").find("4-bit"), std::string::npos) << c.dump();
      EXPECT_EQ(c.at("kernels"), model == "kimi-k2-thinking" ? 4 : 6) << model << " T=" << T << " " << c.dump();
    }
  }
  EXPECT_EQ(seen["kimi-k2-thinking"], 2) << "int4 on both paths";
  EXPECT_EQ(seen["gpt-oss-20b"], 2) << "mxfp4 on both paths";
}

}  // namespace
