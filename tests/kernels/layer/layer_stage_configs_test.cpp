// How the layer resolves its stage configs: explicit texts are parsed and checked, "auto"
// comes from the tables in the given dirs, and run_layer's cache resolves once per problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/stage_tables.hpp"
#include "support/temp_dirs.hpp"
#include "common/emu_backend.hpp"
#include "layer/stage_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/params_json.hpp"
#include "runtime/table.hpp"
#include "tuner/measure/harness.hpp"

namespace fs = std::filesystem;

namespace {

// `hidden` makes the problem (and so its table paths) unique to a test.
moe::Params layer_problem(std::int64_t tokens, std::int64_t hidden) {
  return moe::Params{{"tokens", tokens},          {"dtype", std::string("bf16")},  {"experts", std::int64_t{8}},
                     {"topk", std::int64_t{2}},   {"hidden", hidden},              {"intermediate", std::int64_t{32}},
                     {"align", std::int64_t{4}}};
}

moe::Params complete_layer(const moe::Params& p) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  return moe::complete(f.problem_params, p, "test layer");
}

moe::Params all_auto() {
  moe::Params c;
  for (const char* k : {"router", "dispatch", "gmm_up", "gmm_down", "combine"}) c.set(k, std::string("auto"));
  c.set("pdl", std::int64_t{1});  // the layer's default: programmatic dependent launch on
  c.set("path", std::string("stages")).set("front_ctas", std::int64_t{0}).set("fold_combine", std::int64_t{0});  // the stages' own kernels
  c.set("l2_prefetch", std::int64_t{0});
  return c;
}

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir("stagecfg-" + name); }

// The n-th valid config of the stage that is not its default: picking it proves the table was read.
moe::Params non_default(const moe::Stage& s, const moe::DeviceInfo& dev, int n = 0) {
  const moe::BackendImpl& impl = moe::family(s.family).need_backend(moe::Backend::cpu);
  const moe::Params def = moe::complete(impl.config_params, impl.default_config(s.problem, dev), "default");
  for (const moe::Params& c : impl.space(s.problem, dev, true)) {
    const moe::Params full = moe::complete(impl.config_params, c, "space");
    if (!(full == def) && n-- == 0) return full;
  }
  ADD_FAILURE() << s.family << " has too few configs";
  return def;
}

TEST(LayerStageConfigs, ExplicitTextIsParsedCheckedAndKeptPerStage) {
  const moe::DeviceInfo dev = moe::cpu_device_info(1);
  const moe::Params L = complete_layer(layer_problem(6, 48));
  moe::Params c = all_auto();
  c.set("gmm_up", std::string("block_m=16;block_n=64"));
  const moe::ResolvedLayer r = moe::resolve_layer(moe::Backend::cpu, L, c, dev, {}, true);
  ASSERT_EQ(r.stages.size(), 5u);
  ASSERT_EQ(r.choices.size(), 5u);
  EXPECT_EQ(r.stages[2].name, "gmm_up");
  EXPECT_EQ(r.choices[2].how, "explicit");
  EXPECT_EQ(r.choices[2].config.i("block_m"), 16);
  EXPECT_EQ(r.choices[2].config.i("block_n"), 64);
  EXPECT_TRUE(r.choices[2].config.has("block_k"));  // completed from the family default
  EXPECT_EQ(moe::stage_config_text(r.choices[2].config),
            "block_k=" + std::to_string(r.choices[2].config.i("block_k")) + ";block_m=16;block_n=64");
  // No dirs: auto stages fall back to the default (quietly here), with the reason kept.
  EXPECT_EQ(r.choices[0].how, "default");
  EXPECT_FALSE(r.choices[0].warning.empty());

  // A config the stage family rejects (out of range, or in range but not a tile it has) makes
  // the layer config invalid, naming the stage.
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* bad : {"block_m=7", "block_m=12", "no_such_knob=1"}) {
    c.set("gmm_up", std::string(bad));
    try {
      moe::resolve_layer(moe::Backend::cpu, L, c, dev, {}, true);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const moe::Error& e) {
      EXPECT_NE(std::string(e.what()).find("layer stage gmm_up"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    EXPECT_THROW(moe::tuner::complete_config(f, moe::Backend::cpu, L, c, dev), moe::Error) << bad;
  }
}

// A stage text naming only another kernel (gmm's kernel=wgmma where the default is the mma
// kernel) takes that kernel's first tile, as `moebench run gmm --config kernel=wgmma` does,
// rather than the mma default's tile under it.
TEST(LayerStageConfigs, AKernelNamedAloneTakesItsFirstTile) {
  const moe::DeviceInfo h100 = moe::emu_device_info();
  moe::Params L = layer_problem(20, 256);
  L.set("intermediate", std::int64_t{128});
  L = complete_layer(L);
  moe::Params c = all_auto();
  c.set("gmm_up", std::string("kernel=wgmma"));
  const moe::ResolvedLayer r = moe::resolve_layer(moe::Backend::emu, L, c, h100, {}, true);
  EXPECT_EQ(r.choices[2].config.s("kernel"), "wgmma");
  EXPECT_EQ(r.choices[2].config.i("block_m") % 64, 0) << r.choices[2].config.str();
  EXPECT_EQ(r.choices[3].config.s("kernel"), "mma");  // down stays at its default
  // Keys no config of the space agrees with are still refused, naming the stage.
  c.set("gmm_up", std::string("kernel=wgmma;block_m=16"));
  try {
    moe::resolve_layer(moe::Backend::emu, L, c, h100, {}, true);
    ADD_FAILURE() << "kernel=wgmma;block_m=16 was accepted";
  } catch (const moe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer stage gmm_up"), std::string::npos) << e.what();
  }
}

TEST(LayerStageConfigs, AutoTakesTheTableEntryFromTheGivenDirsFirst) {
  const fs::path a = temp_dir("a"), b = temp_dir("b");
  const moe::DeviceInfo dev = moe::cpu_device_info(1);
  const moe::Params L = complete_layer(layer_problem(16, 56));
  const std::vector<moe::Stage> stages = moe::layer_stages(L);
  const moe::Params want_router = non_default(stages[0], dev), want_down = non_default(stages[3], dev);
  moe::testing::write_stage_table(a, stages[0], 16, want_router);
  moe::testing::write_stage_table(b, stages[0], 16, non_default(stages[0], dev, 1));
  moe::testing::write_stage_table(b, stages[3], 8, want_down);  // only in the second dir, and for another token count
  const moe::ResolvedLayer r = moe::resolve_layer(moe::Backend::cpu, L, all_auto(), dev, {a.string(), b.string()}, true);
  EXPECT_EQ(r.choices[0].how, "exact");
  EXPECT_EQ(r.choices[0].config, want_router);
  EXPECT_EQ(fs::path(r.choices[0].table).parent_path().parent_path().parent_path(), a);
  EXPECT_TRUE(r.choices[0].warning.empty());
  EXPECT_EQ(r.choices[3].how, "nearest");
  EXPECT_EQ(r.choices[3].key, 8);
  EXPECT_EQ(r.choices[3].config, want_down);
  EXPECT_EQ(r.choices[1].how, "default");  // dispatch: no table anywhere
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(LayerStageConfigs, CheckingAnAutoConfigReadsNoTableAndWarnsNothing) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const moe::Params L = complete_layer(layer_problem(3, 40));
  testing::internal::CaptureStderr();
  const moe::Params c = moe::tuner::complete_config(f, moe::Backend::cpu, L, {}, moe::cpu_device_info(1));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(c, all_auto());
  EXPECT_EQ(err, "");
}

TEST(LayerStageConfigs, CacheResolvesOncePerKeyFromAnyThread) {
  const moe::Params L = complete_layer(layer_problem(5, 64));
  moe::Params c = all_auto();
  c.set("combine", std::string("tokens_per_task=1"));
  auto first = moe::cached_resolved_layer(moe::Backend::cpu, L, c, 0, 2);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->choices[4].config.i("tokens_per_task"), 1);
  std::vector<std::shared_ptr<const moe::ResolvedLayer>> got(8);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) ts.emplace_back([&, i] { got[i] = moe::cached_resolved_layer(moe::Backend::cpu, L, c, 0, 2); });
  for (auto& t : ts) t.join();
  for (auto& g : got) EXPECT_EQ(g.get(), first.get());
  // Anything in the key that differs resolves anew.
  EXPECT_NE(moe::cached_resolved_layer(moe::Backend::cpu, L, c, 0, 3).get(), first.get());
  moe::Params c2 = c;
  c2.set("combine", std::string("tokens_per_task=2"));
  const auto other = moe::cached_resolved_layer(moe::Backend::cpu, L, c2, 0, 2);
  EXPECT_NE(other.get(), first.get());
  EXPECT_EQ(other->choices[4].config.i("tokens_per_task"), 2);
  moe::Params L2 = L;
  L2.set("tokens", std::int64_t{6});
  EXPECT_NE(moe::cached_resolved_layer(moe::Backend::cpu, L2, c, 0, 2).get(), first.get());
}

// The layer runs the configs it resolved: an explicit stage config that the stage family
// would reject at run time is refused before anything runs, and a good one gives the right output.
TEST(LayerStageConfigs, LayerRunsWithExplicitStageConfigs) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  moe::InputOptions opt;
  opt.seed = 11;
  const auto p = moe::tuner::prepare(f, layer_problem(9, 72), opt);
  const moe::DeviceInfo dev = moe::cpu_device_info(2);
  moe::Params c = all_auto();
  c.set("router", std::string("rows_per_task=1;select=iterative"));
  c.set("gmm_down", std::string("block_m=8;block_n=32;block_k=64"));
  const moe::Params full = moe::tuner::complete_config(f, moe::Backend::cpu, p.problem, c, dev);
  const auto o = moe::tuner::run_cpu(p, full, 2);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
}

}  // namespace
