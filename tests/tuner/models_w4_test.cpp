// Models with 4-bit weights (docs/w4.md): each form of quantization_config read from a Hugging
// Face config (gpt-oss's mxfp4, compressed-tensors' config_groups as Kimi-K2-Thinking ships it,
// AWQ, GPTQ) and from the kimi-k2-thinking preset; the schemes moebench does not run load for
// bf16 tuning but refuse --dtype int4; a --tp that splits a group is refused naming the ones that work.
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

// A small MoE config.json with this quantization_config, written to a temp file.
std::string config_with(const json& quant, const char* model_type = "deepseek_v3") {
  json j = {{"model_type", model_type},   {"n_routed_experts", 64},    {"num_experts_per_tok", 4},
            {"hidden_size", 2048},        {"moe_intermediate_size", 768}, {"torch_dtype", "bfloat16"},
            {"quantization_config", quant}};
  static int n = 0;
  const fs::path p = fs::temp_directory_path() / ("moebench_w4_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".json");
  std::ofstream(p) << j.dump();
  return p.string();
}

using moe::testing::error_of;

Params loaded(const json& quant) {
  const std::string path = config_with(quant);
  Params m = moe::tuner::load_hf_config(path);
  fs::remove(path);
  return m;
}

TEST(ModelW4, GptOssMxfp4) {
  const Params m = loaded({{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"model.layers.*.self_attn", "lm_head"}}});
  EXPECT_EQ(m.s("quant"), "mxfp4");
  EXPECT_EQ(m.s("dtype"), "bf16");  // the activations'
  EXPECT_FALSE(m.has("group"));
}

TEST(ModelW4, CompressedTensorsConfigGroups) {
  const json weights = {{"num_bits", 4}, {"type", "int"}, {"symmetric", true}, {"group_size", 32}, {"strategy", "group"}};
  const json q = {{"quant_method", "compressed-tensors"},
                  {"format", "pack-quantized"},
                  {"config_groups", {{"group_0", {{"targets", {"Linear"}}, {"input_activations", nullptr}, {"weights", weights}}}}}};
  Params m = loaded(q);
  EXPECT_EQ(m.s("quant"), "int4");
  EXPECT_EQ(m.i("group"), 32);
  EXPECT_EQ(m.i("zero_point"), 0);
  json asym = q;
  asym["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  asym["config_groups"]["group_0"]["weights"]["group_size"] = 128;
  m = loaded(asym);
  EXPECT_EQ(m.s("quant"), "int4");
  EXPECT_EQ(m.i("group"), 128);
  EXPECT_EQ(m.i("zero_point"), 1);
  // Quantized activations (W4A8) and other group sizes are not moebench's int4.
  json w4a8 = q;
  w4a8["config_groups"]["group_0"]["input_activations"] = {{"num_bits", 8}, {"type", "int"}};
  EXPECT_EQ(loaded(w4a8).s("quant"), "int4 with quantized activations");
  json g64 = q;
  g64["config_groups"]["group_0"]["weights"]["group_size"] = 64;
  m = loaded(g64);
  EXPECT_EQ(m.s("quant"), "int4 with group_size 64");
  EXPECT_FALSE(m.has("group"));
  Params p;
  p.set("dtype", std::string("int4")).set("hidden", std::int64_t{2048}).set("intermediate", std::int64_t{768});
  const std::string e = error_of([&] { moe::tuner::check_w4_model(m, p, 1); });
  EXPECT_NE(e.find("the model is int4 with group_size 64"), std::string::npos) << e;
  EXPECT_NE(e.find("tune it in bf16"), std::string::npos) << e;
  // 8-bit compressed-tensors weights are not read as 4-bit.
  json w8 = q;
  w8["config_groups"]["group_0"]["weights"]["num_bits"] = 8;
  EXPECT_FALSE(loaded(w8).has("quant"));
}

TEST(ModelW4, AwqAndGptq) {
  Params m = loaded({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}, {"version", "gemm"}});
  EXPECT_EQ(m.s("quant"), "int4");
  EXPECT_EQ(m.i("group"), 128);
  EXPECT_EQ(m.i("zero_point"), 1);
  m = loaded({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"sym", true}, {"desc_act", false}});
  EXPECT_EQ(m.s("quant"), "int4");
  EXPECT_EQ(m.i("zero_point"), 0);
  m = loaded({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}, {"sym", false}});
  EXPECT_EQ(m.i("group"), 32);
  EXPECT_EQ(m.i("zero_point"), 1);
  EXPECT_EQ(loaded({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", true}}).s("quant"),
            "int4 with desc_act (act-order)");
  EXPECT_EQ(loaded({{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 128}}).s("quant"), "8-bit integer weights");
  EXPECT_EQ(loaded({{"quant_method", "awq"}, {"bits", 4}, {"group_size", -1}}).s("quant"), "int4 with group_size -1");
  const std::string e = error_of([] { loaded({{"quant_method", "awq"}, {"bits", "four"}}); });
  EXPECT_NE(e.find("quantization_config field 'bits' is \"four\", expected an integer"), std::string::npos) << e;
}

TEST(ModelW4, Presets) {
  const Params k = moe::tuner::load_model("kimi-k2-thinking");
  EXPECT_EQ(k.s("quant"), "int4");
  EXPECT_EQ(k.i("group"), 32);
  EXPECT_EQ(k.i("zero_point"), 0);
  const Params base = moe::tuner::load_model("kimi-k2");
  for (const char* f : {"experts", "topk", "shared", "hidden", "intermediate"}) EXPECT_EQ(k.i(f), base.i(f)) << f;
  EXPECT_EQ(moe::tuner::load_model("gpt-oss-120b").s("quant"), "mxfp4");
}

TEST(ModelW4, TpThatSplitsAGroupNamesTheOnesThatWork) {
  const Params m = moe::tuner::load_model("gpt-oss-120b");
  const Params sharded = moe::tuner::apply_parallelism(m, 4, 1, 0);  // 2880 / 4 = 720, not a multiple of 32
  Params p;
  p.set("dtype", std::string("mxfp4")).set("hidden", sharded.i("hidden")).set("intermediate", sharded.i("intermediate"));
  const std::string e = error_of([&] { moe::tuner::check_w4_model(m, p, 4); });
  EXPECT_NE(e.find("2880 / --tp 4 = 720 is not: use --tp 1 or 2"), std::string::npos) << e;
  EXPECT_NE(e.find("--tp 1 --ep 4"), std::string::npos) << e;
}

}  // namespace
