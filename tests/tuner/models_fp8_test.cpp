// Models served in fp8: quantization_config read from Hugging Face configs and presets
// (block size, ue8m0 scales), and the refusals that name what to do (--tp values that leave
// I/tp a multiple of 128, another recipe's blocks).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/error.hpp"
#include "support/error_text.hpp"
#include "tuner/problem/models.hpp"

namespace {

namespace fs = std::filesystem;
using moe::Params;
using nlohmann::json;

const std::string kHf = std::string(MOEBENCH_TEST_DATA) + "/hf/";

// The DeepSeek-V3 config with its quantization_config changed, written to a temp file.
std::string deepseek_with(const json& quant) {
  std::ifstream in(kHf + "deepseek-v3.json");
  json j = json::parse(in);
  j["quantization_config"] = quant;
  static int n = 0;
  const fs::path p = fs::temp_directory_path() / ("moebench_fp8_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".json");
  std::ofstream(p) << j.dump();
  return p.string();
}

using moe::testing::error_of;

TEST(ModelFp8, Ue8m0ScalesFromTheConfig) {
  const std::string path =
      deepseek_with({{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}, {"scale_fmt", "ue8m0"}});
  const Params m = moe::tuner::load_hf_config(path);
  EXPECT_EQ(m.s("quant"), "fp8");
  EXPECT_EQ(m.s("scale_fmt"), "ue8m0");
  fs::remove(path);
}

TEST(ModelFp8, OtherBlocksLoadButRefuseFp8) {
  const std::string path = deepseek_with({{"quant_method", "fp8"}, {"weight_block_size", {64, 64}}});
  const Params m = moe::tuner::load_hf_config(path);  // bf16 tuning of the model still works
  EXPECT_NE(m.s("quant"), "fp8");
  Params p;
  p.set("hidden", std::int64_t{7168}).set("intermediate", std::int64_t{2048});
  const std::string e = error_of([&] { moe::tuner::check_fp8_model(m, p, 1); });
  EXPECT_NE(e.find("weight_block_size [64,64]"), std::string::npos) << e;
  EXPECT_NE(e.find("128x128"), std::string::npos) << e;
  fs::remove(path);
  const std::string bad = deepseek_with({{"quant_method", "fp8"}, {"scale_fmt", "e5m2"}});
  EXPECT_NE(error_of([&] { moe::tuner::load_hf_config(bad); }).find("scale_fmt"), std::string::npos);
  fs::remove(bad);
}

TEST(ModelFp8, OtherQuantMethodsAreNotFp8) {
  const Params m = moe::tuner::load_hf_config(kHf + "gpt-oss-120b.json");  // mxfp4 (docs/w4.md)
  EXPECT_EQ(m.s("quant"), "mxfp4");
  EXPECT_FALSE(m.has("scale_fmt"));
}

TEST(ModelFp8, TensorParallelValuesThatKeep128Blocks) {
  EXPECT_EQ(moe::tuner::fp8_tp_values(2048), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(moe::tuner::fp8_tp_values(768), (std::vector<int>{1, 2}));  // powers of two only: no one deploys --tp 3
  EXPECT_EQ(moe::tuner::fp8_tp_values(1536), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(moe::tuner::fp8_tp_values(1344), (std::vector<int>{}));
  const Params model = moe::tuner::load_model("qwen3-30b-a3b");
  Params p;
  p.set("hidden", std::int64_t{2048}).set("intermediate", std::int64_t{768 / 4});
  const std::string e = error_of([&] { moe::tuner::check_fp8_model(model, p, 4); });
  EXPECT_NE(e.find("768 / --tp 4 = 192"), std::string::npos) << e;
  EXPECT_NE(e.find("use --tp 1 or 2, or keep each expert whole"), std::string::npos) << e;
  EXPECT_NE(e.find("--tp 1 --ep 4 (32 of the 128 experts per rank)"), std::string::npos) << e;
  EXPECT_EQ(e.find("3, 6"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  p.set("intermediate", std::int64_t{768 / 2});
  EXPECT_EQ(error_of([&] { moe::tuner::check_fp8_model(model, p, 2); }), "");
}

}  // namespace
