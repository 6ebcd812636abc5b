// The engines' own config files written from a sweep's results: names, keys and values as vLLM's
// get_moe_configs and SGLang's loader read them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "moe/error.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/store/engine_config.hpp"

namespace {

using namespace moe;
using namespace moe::tuner;
namespace fs = std::filesystem;

json config(std::int64_t m, std::int64_t k) {
  return {{"BLOCK_SIZE_K", k}, {"BLOCK_SIZE_M", m}, {"BLOCK_SIZE_N", 64}, {"GROUP_SIZE_M", 1}, {"num_stages", 3}, {"num_warps", 4}};
}

// Points at tokens 1 and 16 for each stage given, with E=8 (2 local of them with `ep`), N=96.
json results(const std::vector<std::string>& stages, std::int64_t hidden = 128, bool ep = false,
             const std::string& dtype = "bf16") {
  json recs = json::array(), pts = json::array();
  int i = 0;
  for (const auto& stage : stages)
    for (std::int64_t t : {1, 16}) {
      json problem = {{"experts", 8}, {"shared", 0}, {"intermediate", 96}, {"hidden", hidden}, {"topk", 2},
                      {"dtype", dtype}, {"stage", stage}, {"expert_begin", ep ? 2 : 0}, {"expert_end", ep ? 4 : -1}};
      recs.push_back({{"point_index", i}, {"problem", problem}, {"config", config(16, 64)}});
      pts.push_back({{"point_index", i}, {"kernel", "gmm"}, {"tokens", t},
                     {"chosen", {{"config", config(t == 1 ? 16 : 32, stage == "up" ? 64 : 128)}}}});
      ++i;
    }
  return {{"meta", {{"device", "NVIDIA H200 NVL"}, {"engine_info", {{"triton", "3.9.0"}}}}}, {"records", recs}, {"points", pts}};
}

nlohmann::ordered_json read(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::ordered_json::parse(f);
}

TEST(EngineConfig, VllmFileIsNamedAndKeyedAsItsLoaderReads) {
  const fs::path d = moe::testing::fresh_temp_dir("engine-config-vllm");
  const auto files = write_engine_configs(results({"up", "down"}), peers::Engine::vllm, d.string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0]).filename(), "E=8,N=96,device_name=NVIDIA_H200.json");
  const auto j = read(files[0]);
  EXPECT_EQ(j["triton_version"], "3.9.0");
  ASSERT_TRUE(j.contains("1") && j.contains("16"));
  EXPECT_EQ(j.size(), 3u);
  // One config for both of vLLM's GEMMs: up's.
  EXPECT_EQ(j["16"]["BLOCK_SIZE_K"], 64);
  EXPECT_EQ(j["16"]["BLOCK_SIZE_M"], 32);
  std::vector<std::string> keys;
  for (auto& [k, v] : j["1"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps",
                                            "num_stages"}));
}

TEST(EngineConfig, SglangWritesUpAndDownUnderItsTritonVersion) {
  const fs::path d = moe::testing::fresh_temp_dir("engine-config-sglang");
  auto files = write_engine_configs(results({"up", "down"}, 128, true), peers::Engine::sglang, d.string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u);
  // SGLang's get_device_name(): the name as torch gives it, spaces made underscores.
  EXPECT_EQ(files[0], (d / "configs/triton_3_9_0/E=2,N=96,device_name=NVIDIA_H200_NVL.json").string());
  EXPECT_EQ(files[1], (d / "configs/triton_3_9_0/E=2,N=96,device_name=NVIDIA_H200_NVL_down.json").string());
  const auto down = read(files[1]);
  EXPECT_FALSE(down.contains("triton_version"));  // SGLang reads every key as a token count
  EXPECT_EQ(down["16"]["BLOCK_SIZE_K"], 128);
}

TEST(EngineConfig, TwoShapesBehindOneFileNameAreRefused) {
  json r = results({"up"});
  json other = results({"up"}, 256);
  for (auto& x : other["records"]) x["point_index"] = x["point_index"].get<int>() + 10;
  for (auto& x : other["points"]) x["point_index"] = x["point_index"].get<int>() + 10;
  for (auto& x : other["records"]) r["records"].push_back(x);
  for (auto& x : other["points"]) r["points"].push_back(x);
  const fs::path d = moe::testing::fresh_temp_dir("engine-config-two");
  EXPECT_THROW(write_engine_configs(r, peers::Engine::vllm, d.string()), Error);
}

// Block-scaled fp8 is the engines' fp8_w8a8 with block_shape [128, 128], spelled as each writes it.
TEST(EngineConfig, Fp8FilesNameTheirDtypeAndBlockShape) {
  const fs::path d = moe::testing::fresh_temp_dir("engine-config-fp8");
  const auto v = write_engine_configs(results({"up"}, 128, false, "fp8"), peers::Engine::vllm, (d / "v").string());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(fs::path(v[0]).filename(), "E=8,N=96,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json");
  auto s = write_engine_configs(results({"up", "down"}, 128, false, "fp8"), peers::Engine::sglang, (d / "s").string());
  std::sort(s.begin(), s.end());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(fs::path(s[0]).filename(), "E=8,N=96,device_name=NVIDIA_H200_NVL,dtype=fp8_w8a8,block_shape=[128, 128].json");
  EXPECT_EQ(fs::path(s[1]).filename(), "E=8,N=96,device_name=NVIDIA_H200_NVL,dtype=fp8_w8a8,block_shape=[128, 128]_down.json");
}

TEST(EngineConfig, DeviceNames) {
  EXPECT_EQ(engine_device_name("NVIDIA H100 80GB HBM3"), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(engine_device_name("NVIDIA H200"), "NVIDIA_H200");
  EXPECT_EQ(engine_device_name("NVIDIA H200 NVL"), "NVIDIA_H200");
  EXPECT_EQ(engine_device_name("NVIDIA H200 NVL", peers::Engine::sglang), "NVIDIA_H200_NVL");
  EXPECT_EQ(engine_device_name("cpu: AMD EPYC 7B13"), "cpu");
}

}  // namespace

namespace {

// A layer sweep's points: the layer problem has no stage, and its config serves both GEMMs.
TEST(EngineConfig, LayerPointsWriteTheFileOfBothGemms) {
  json r = results({"up"});
  for (auto& x : r["records"]) {
    x["problem"].erase("stage");
    x["problem"]["shared"] = 1;
  }
  for (auto& x : r["points"]) x["kernel"] = "moe-layer";
  const fs::path d = moe::testing::fresh_temp_dir("engine-config-layer");
  for (auto engine : {peers::Engine::vllm, peers::Engine::sglang}) {
    const auto files = write_engine_configs(r, engine, d.string());
    ASSERT_EQ(files.size(), 1u);
    // The shared expert is one more expert of w13 for the engine; SGLang reads the up file for both.
    EXPECT_EQ(fs::path(files[0]).filename(), engine == peers::Engine::vllm ? "E=9,N=96,device_name=NVIDIA_H200.json"
                                                                           : "E=9,N=96,device_name=NVIDIA_H200_NVL.json");
    EXPECT_EQ(read(files[0])["16"]["BLOCK_SIZE_M"], 32);
  }
  // Points of another family are not the engine's.
  for (auto& x : r["points"]) x["kernel"] = "combine";
  EXPECT_TRUE(write_engine_configs(r, peers::Engine::vllm, d.string()).empty());
}

}  // namespace
