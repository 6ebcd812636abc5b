// After a merge, the layer records whose stage configs the merged tables no longer choose are
// named, so the user knows to re-time them (each shard timed the layer with its own tables).
#include <gtest/gtest.h>

#include "moe/cuda_device.hpp"
#include "moe/family.hpp"
#include "runtime/params_json.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/search/layer_units.hpp"
#include "tuner/store/layer_records.hpp"

using namespace moe;
using namespace moe::tuner;

TEST(MergeLayerRecords, RecordsTimedWithOtherStageConfigsAreNamed) {
  const auto dir = moe::testing::fresh_temp_dir("layer-records");
  const FamilyDesc& layer = family("moe-layer");
  Params problem = complete(layer.problem_params,
                            Params{{"tokens", std::int64_t{16}}, {"experts", std::int64_t{16}}, {"topk", std::int64_t{2}},
                                   {"hidden", std::int64_t{128}}, {"intermediate", std::int64_t{128}}},
                            "moe-layer");
  const DeviceInfo dev = cpu_device_info(1);
  const Params config = layer.need_backend(Backend::cpu).default_config(problem, dev);
  const ResolvedConfig now = resolve_layer_config(Backend::cpu, problem, config, dev, {dir.string()});
  ASSERT_FALSE(now.source.empty());
  Params key_problem = problem;
  key_problem.erase("tokens");
  json rec = {{"kernel", "moe-layer"}, {"status", "ok"}, {"tokens", 16}, {"config_key", "default"},
              {"problem", runtime::params_to_json(key_problem)}, {"config", runtime::params_to_json(config)},
              {"resolved_config", runtime::params_to_json(now.config)}};
  json results = {{"meta", {{"backend", "cpu"}, {"device", dev.name}}}, {"records", {rec}}};
  EXPECT_TRUE(stale_layer_records(results, dir.string()).empty());

  // A shard timed this record with another stage config than the tables now give.
  const std::string stage = now.source.begin().key();
  results["records"][0]["resolved_config"][stage] = "block_x=999";
  const auto stale = stale_layer_records(results, dir.string());
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_NE(stale[0].find("T=16"), std::string::npos) << stale[0];
  EXPECT_NE(stale[0].find(stage + " \"block_x=999\" -> "), std::string::npos) << stale[0];
  std::filesystem::remove_all(dir);
}
