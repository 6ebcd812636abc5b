#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/error.hpp"
#include "tuner/problem/models.hpp"

namespace fs = std::filesystem;
using moe::Params;
using nlohmann::json;

namespace {

const std::string kHf = std::string(MOEBENCH_TEST_DATA) + "/hf/";
const std::string kPresets = std::string(MOEBENCH_SOURCE_DIR) + "/configs/models/";

struct Expect {
  const char* name;
  std::int64_t experts, topk, shared, groups, topk_group;
  const char* scoring;
  std::int64_t bias, renormalize;
  double rsf;
  std::int64_t hidden, intermediate;
};

// The public config.json of each model (see each preset's "source").
const std::vector<Expect> kModels = {
    {"deepseek-v3", 256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5, 7168, 2048},
    {"gpt-oss-120b", 128, 4, 0, 1, 1, "softmax", 0, 1, 1.0, 2880, 2880},
    {"gpt-oss-20b", 32, 4, 0, 1, 1, "softmax", 0, 1, 1.0, 2880, 2880},
    {"kimi-k2", 384, 8, 1, 1, 1, "sigmoid", 1, 1, 2.827, 7168, 2048},
    {"kimi-k2-thinking", 384, 8, 1, 1, 1, "sigmoid", 1, 1, 2.827, 7168, 2048},
    {"kimi-vl-a3b", 64, 6, 2, 1, 1, "sigmoid", 1, 1, 2.446, 2048, 1408},
    {"llama4-maverick", 128, 1, 1, 1, 1, "sigmoid", 0, 0, 1.0, 5120, 8192},
    {"mixtral-8x7b", 8, 2, 0, 1, 1, "softmax", 0, 1, 1.0, 4096, 14336},
    {"qwen3-235b-a22b", 128, 8, 0, 1, 1, "softmax", 0, 1, 1.0, 4096, 1536},
    {"qwen3-30b-a3b", 128, 8, 0, 1, 1, "softmax", 0, 1, 1.0, 2048, 768},
    {"qwen3-next-80b-a3b", 512, 10, 1, 1, 1, "softmax", 0, 1, 1.0, 2048, 512},
};

const std::vector<std::string> kKeys = {"bias",        "dtype",  "experts", "group_score", "groups",
                                        "hidden",      "intermediate", "renormalize", "rsf", "scoring",
                                        "shared",      "topk",   "topk_group"};

void expect_model(const Params& m, const Expect& e, const std::string& what) {
  SCOPED_TRACE(what);
  const std::string name = e.name;
  // gpt-oss's experts are its own (a clamped SwiGLU on interleaved gate/up rows, with biases);
  // every other model's are silu(gate)*up on split rows, without biases, and say nothing.
  const std::vector<std::string> expert_fn = {"activation", "alpha", "limit", "w13_layout", "w13_block", "bias13", "bias2"};
  const bool oai = name.rfind("gpt-oss", 0) == 0;
  std::vector<std::string> keys;
  for (auto& [k, v] : m.values())
    if (k != "quant" && k != "scale_fmt" && k != "group" && k != "zero_point" && std::find(expert_fn.begin(), expert_fn.end(), k) == expert_fn.end())
      keys.push_back(k);
  EXPECT_EQ(keys, kKeys);
  for (const std::string& k : expert_fn) EXPECT_EQ(m.has(k), oai) << k;
  if (oai) {
    EXPECT_EQ(m.s("activation"), "swiglu_oai");
    EXPECT_EQ(m.f("alpha"), 1.702);
    EXPECT_EQ(m.f("limit"), 7.0);
    EXPECT_EQ(m.s("w13_layout"), "interleaved");
    EXPECT_EQ(m.i("w13_block"), 1);
    EXPECT_EQ(m.i("bias13"), 1);
    EXPECT_EQ(m.i("bias2"), 1);
  }
  // The models served as fp8 block-scaled W8A8 say so (quantization_config), and those with
  // 4-bit weights (docs/w4.md); the others do not.
  const bool fp8 = name == "deepseek-v3" || name == "kimi-k2" || name.rfind("qwen3-", 0) == 0;
  const std::string w4 = oai ? "mxfp4" : name == "kimi-k2-thinking" ? "int4" : "";
  EXPECT_EQ(m.has("quant"), fp8 || !w4.empty());
  if (!w4.empty()) EXPECT_EQ(m.s("quant"), w4);
  EXPECT_EQ(m.has("group"), w4 == "int4");
  EXPECT_EQ(m.has("scale_fmt"), fp8);
  if (fp8) {
    EXPECT_EQ(m.s("quant"), "fp8");
    EXPECT_EQ(m.s("scale_fmt"), "fp32");
  }
  EXPECT_EQ(m.i("experts"), e.experts);
  EXPECT_EQ(m.i("topk"), e.topk);
  EXPECT_EQ(m.i("shared"), e.shared);
  EXPECT_EQ(m.i("groups"), e.groups);
  EXPECT_EQ(m.i("topk_group"), e.topk_group);
  EXPECT_EQ(m.s("group_score"), "top2_sum");
  EXPECT_EQ(m.s("scoring"), e.scoring);
  EXPECT_EQ(m.i("bias"), e.bias);
  EXPECT_EQ(m.i("renormalize"), e.renormalize);
  ASSERT_TRUE(std::holds_alternative<double>(m.at("rsf")));
  EXPECT_EQ(m.f("rsf"), e.rsf);
  EXPECT_EQ(m.i("hidden"), e.hidden);
  EXPECT_EQ(m.i("intermediate"), e.intermediate);
  EXPECT_EQ(m.s("dtype"), "bf16");
}

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() / ("moebench_models_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// Runs f, expecting a moe::Error that contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const moe::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    for (auto& s : fragments) EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' missing in: " << msg;
  }
}

json preset_json(const std::string& name) {
  std::ifstream in(kPresets + name + ".json");
  return json::parse(in);
}

}  // namespace

// ---------------------------------------------------------------- presets

TEST(ModelPresets, NamesAreTheShippedPresets) {
  std::vector<std::string> want;
  for (auto& e : kModels) want.push_back(e.name);
  EXPECT_EQ(moe::tuner::model_names(), want);
  EXPECT_EQ(fs::path(moe::tuner::models_dir()), fs::path(kPresets).parent_path());
}

TEST(ModelPresets, EveryPresetLoadsWithThePublicValues) {
  for (auto& e : kModels) {
    expect_model(moe::tuner::load_model(e.name), e, std::string("preset ") + e.name);
    expect_model(moe::tuner::load_model(kPresets + e.name + ".json"), e, std::string("preset path ") + e.name);
    const json j = preset_json(e.name);
    EXPECT_EQ(j.at("name"), e.name);
    EXPECT_FALSE(j.at("source").get<std::string>().empty());
  }
}

TEST(ModelPresets, UnknownNameListsThePresets) {
  expect_error([] { moe::tuner::load_model("deepseek-v4"); },
               {"unknown model 'deepseek-v4'", "deepseek-v3", "kimi-k2", "llama4-maverick", "qwen3-30b-a3b",
                "Hugging Face config.json"});
  expect_error([] { moe::tuner::load_model(""); }, {"unknown model ''", "mixtral-8x7b"});
  expect_error([] { moe::tuner::load_model("/no/such/model.json"); }, {"'/no/such/model.json'", "does not exist"});
}

TEST(ModelPresets, MissingOrWrongFieldsNameTheFieldAndTheFile) {
  TempDir dir;
  const json good = preset_json("deepseek-v3");
  for (const char* field : {"experts", "topk", "shared", "groups", "topk_group", "group_score", "scoring", "bias",
                            "renormalize", "rsf", "hidden", "intermediate", "dtype"}) {
    json j = good;
    j.erase(field);
    const std::string p = dir.write(std::string("no_") + field + ".json", j.dump());
    expect_error([&] { moe::tuner::load_model(p); }, {p, "missing the field '" + std::string(field) + "'"});
  }
  struct Bad {
    const char* field;
    json value;
    std::string says;
  };
  for (const Bad& b : {Bad{"topk", "8", "expected an integer"}, Bad{"experts", 25.5, "expected an integer"},
                       Bad{"rsf", "2.5", "expected a number"}, Bad{"bias", 2, "0, 1, true or false"},
                       Bad{"scoring", "relu", "softmax|sigmoid"}, Bad{"dtype", "int8", "bf16|f16|f32"},
                       Bad{"groups", 7, "does not divide experts"}, Bad{"topk_group", 9, "more than groups"},
                       Bad{"rsf", 0.0, "'rsf' = 0 must be greater than 0"}, Bad{"rsf", -2.5, "'rsf' = -2.5 must be greater than 0"},
                       Bad{"experts", 0, "out of range"}}) {
    json j = good;
    j[b.field] = b.value;
    const std::string p = dir.write("bad.json", j.dump());
    expect_error([&] { moe::tuner::load_model(p); }, {p, b.says});
  }
  json few = good;  // 2 groups of 32 kept: 64 experts to pick from
  few["topk_group"] = 2;
  few["topk"] = 64;
  EXPECT_NO_THROW(moe::tuner::load_model(dir.write("ok.json", few.dump())));
  few["topk_group"] = 1;
  const std::string pk = dir.write("few.json", few.dump());
  expect_error([&] { moe::tuner::load_model(pk); }, {pk, "topk = 64 is more than the 32 experts"});
  json j = good;
  j["topK"] = 8;
  const std::string p = dir.write("typo.json", j.dump());
  expect_error([&] { moe::tuner::load_model(p); }, {p, "unknown field 'topK'"});
  const std::string q = dir.write("broken.json", "{\"experts\": 8,");
  expect_error([&] { moe::tuner::load_model(q); }, {q, "not valid JSON"});
}

TEST(ModelPresets, BooleansAndDtypeSpellingsAreAccepted) {
  TempDir dir;
  json j = preset_json("mixtral-8x7b");
  j["renormalize"] = true;
  j["bias"] = false;
  j["dtype"] = "bfloat16";
  j["rsf"] = 1;
  const Params m = moe::tuner::load_model(dir.write("m.json", j.dump()));
  EXPECT_EQ(m.i("renormalize"), 1);
  EXPECT_EQ(m.i("bias"), 0);
  EXPECT_EQ(m.s("dtype"), "bf16");
  EXPECT_TRUE(std::holds_alternative<double>(m.at("rsf")));
}

TEST(ModelPresets, ModelsDirFollowsTheEnvironment) {
  TempDir dir;
  json j = preset_json("kimi-k2");
  dir.write("tiny.json", j.dump());
  dir.write("notes.txt", "not a preset");
  ASSERT_EQ(setenv("MOEBENCH_MODELS_DIR", dir.str().c_str(), 1), 0);
  EXPECT_EQ(moe::tuner::models_dir(), dir.str());
  EXPECT_EQ(moe::tuner::model_names(), std::vector<std::string>{"tiny"});
  EXPECT_EQ(moe::tuner::load_model("tiny").i("experts"), 384);
  expect_error([] { moe::tuner::load_model("deepseek-v3"); }, {"unknown model 'deepseek-v3'", "tiny", dir.str()});
  ASSERT_EQ(setenv("MOEBENCH_MODELS_DIR", (dir.str() + "/empty").c_str(), 1), 0);
  expect_error([] { moe::tuner::load_model("x"); }, {"no presets found", "MOEBENCH_MODELS_DIR"});
  unsetenv("MOEBENCH_MODELS_DIR");
  EXPECT_EQ(moe::tuner::model_names().size(), kModels.size());
}

// ---------------------------------------------------------------- Hugging Face configs

TEST(ModelHfConfig, EachFamilyParsesToItsPreset) {
  for (auto& e : kModels) {
    const std::string file = kHf + e.name + ".json";
    Params hf = moe::tuner::load_hf_config(file);
    EXPECT_EQ(moe::tuner::load_model(file), hf) << "load_model should recognise " << file;
    // Qwen3-Next's shared expert is gated: its config.json parses without it (the gate has no
    // fused form), the preset fuses it with weight 1, which moves the same bytes.
    if (std::string(e.name) == "qwen3-next-80b-a3b") {
      EXPECT_EQ(hf.i("shared"), 0);
      hf.set("shared", std::int64_t{1});
    }
    expect_model(hf, e, std::string("hf ") + e.name);
    EXPECT_EQ(hf, moe::tuner::load_model(e.name)) << e.name << ": " << hf.str();
  }
}

TEST(ModelHfConfig, GptOssReadsItsSwigluLimitAndRefusesABadOne) {
  TempDir dir;
  json j = json::parse(std::ifstream(kHf + "gpt-oss-120b.json"));
  j["swiglu_limit"] = 5.5;
  EXPECT_EQ(moe::tuner::load_hf_config(dir.write("limit.json", j.dump())).f("limit"), 5.5);
  j.erase("swiglu_limit");
  const Params m = moe::tuner::load_hf_config(dir.write("none.json", j.dump()));
  EXPECT_EQ(m.f("limit"), 7.0);
  EXPECT_EQ(m.s("activation"), "swiglu_oai");
  j["swiglu_limit"] = -1;
  const std::string bad = dir.write("bad.json", j.dump());
  expect_error([&] { moe::tuner::load_hf_config(bad); }, {bad, "swiglu_limit -1", "7.0"});
  j["swiglu_limit"] = "seven";
  const std::string word = dir.write("word.json", j.dump());
  expect_error([&] { moe::tuner::load_hf_config(word); }, {word, "swiglu_limit", "expected a number"});
}

TEST(ModelPresets, AnExpertFunctionFieldOutOfItsRangeIsAnError) {
  TempDir dir;
  json j = preset_json("gpt-oss-120b");
  j["limit"] = 0;
  const std::string p = dir.write("zero.json", j.dump());
  expect_error([&] { moe::tuner::load_model(p); }, {p, "limit"});
  j = preset_json("gpt-oss-120b");
  j["activation"] = "gelu";
  const std::string q = dir.write("gelu.json", j.dump());
  expect_error([&] { moe::tuner::load_model(q); }, {q, "activation", "swiglu_oai"});
}

TEST(ModelHfConfig, GroupLimitedGreedyScoresGroupsByTheirBest) {
  const Params m = moe::tuner::load_hf_config(kHf + "deepseek-v2.json");
  EXPECT_EQ(m.i("experts"), 160);
  EXPECT_EQ(m.i("topk"), 6);
  EXPECT_EQ(m.i("shared"), 2);
  EXPECT_EQ(m.i("groups"), 8);
  EXPECT_EQ(m.i("topk_group"), 3);
  EXPECT_EQ(m.s("group_score"), "max");
  EXPECT_EQ(m.s("scoring"), "softmax");
  EXPECT_EQ(m.i("bias"), 0);
  EXPECT_EQ(m.i("renormalize"), 0);
  EXPECT_EQ(m.f("rsf"), 16.0);
  EXPECT_EQ(m.i("intermediate"), 1536);
}

TEST(ModelHfConfig, GatedSharedExpertIsLeftOutWithAWarning) {
  testing::internal::CaptureStderr();
  const Params m = moe::tuner::load_hf_config(kHf + "qwen2-moe.json");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(m.i("experts"), 60);
  EXPECT_EQ(m.i("topk"), 4);
  EXPECT_EQ(m.i("shared"), 0);
  EXPECT_EQ(m.i("renormalize"), 0);
  EXPECT_EQ(m.i("intermediate"), 1408);
  EXPECT_NE(err.find("warning"), std::string::npos) << err;
  EXPECT_NE(err.find("shared_expert_intermediate_size = 5632"), std::string::npos) << err;
  EXPECT_NE(err.find("qwen2-moe.json"), std::string::npos) << err;
}

TEST(ModelHfConfig, DefaultsByModelType) {
  TempDir dir;
  auto load = [&](const json& j) { return moe::tuner::load_hf_config(dir.write("c.json", j.dump())); };
  const json base = {{"hidden_size", 1024}, {"intermediate_size", 512}, {"num_local_experts", 16}, {"num_experts_per_tok", 2}};
  {
    const Params m = load(base);  // no model_type: transformers' defaults
    EXPECT_EQ(m.s("scoring"), "softmax");
    EXPECT_EQ(m.i("renormalize"), 0);
    EXPECT_EQ(m.i("shared"), 0);
    EXPECT_EQ(m.i("groups"), 1);
    EXPECT_EQ(m.f("rsf"), 1.0);
    EXPECT_EQ(m.s("dtype"), "bf16");
  }
  for (const char* t : {"mixtral", "gpt_oss", "deepseek_v3"}) {
    json j = base;
    j["model_type"] = t;
    if (std::string(t) == "deepseek_v3") j["moe_intermediate_size"] = 256;
    EXPECT_EQ(load(j).i("renormalize"), 1) << t;
  }
  {
    json j = base;
    j["model_type"] = "llama4_text";  // a text-only Llama 4, no nesting
    const Params m = load(j);
    EXPECT_EQ(m.s("scoring"), "sigmoid");
    EXPECT_EQ(m.i("shared"), 1);
    EXPECT_EQ(m.i("renormalize"), 0);
  }
  {
    json j = base;
    j["torch_dtype"] = "float16";
    EXPECT_EQ(load(j).s("dtype"), "f16");
    j["torch_dtype"] = "float32";
    EXPECT_EQ(load(j).s("dtype"), "f32");
    j["torch_dtype"] = "float8_e4m3fn";
    EXPECT_EQ(load(j).s("dtype"), "bf16");
    j.erase("torch_dtype");
    j["dtype"] = "float16";  // newer transformers write "dtype"
    EXPECT_EQ(load(j).s("dtype"), "f16");
  }
  {
    json j = base;  // nulls mean "not set"
    j["n_group"] = nullptr;
    j["n_shared_experts"] = nullptr;
    j["routed_scaling_factor"] = nullptr;
    const Params m = load(j);
    EXPECT_EQ(m.i("groups"), 1);
    EXPECT_EQ(m.i("shared"), 0);
    EXPECT_EQ(m.f("rsf"), 1.0);
  }
  {
    json j = base;  // greedy ignores n_group
    j["n_group"] = 4;
    j["topk_group"] = 2;
    j["topk_method"] = "greedy";
    const Params m = load(j);
    EXPECT_EQ(m.i("groups"), 1);
    EXPECT_EQ(m.i("topk_group"), 1);
  }
}

TEST(ModelHfConfig, MissingFieldsNameEverySpellingAndTheFile) {
  TempDir dir;
  const json full = json::parse(std::ifstream(kHf + "deepseek-v3.json"));
  struct Case {
    std::vector<const char*> erase;
    std::vector<std::string> says;
  };
  for (const Case& c : {Case{{"n_routed_experts"}, {"number of routed experts", "n_routed_experts, num_local_experts, num_experts"}},
                        Case{{"num_experts_per_tok"}, {"experts per token", "num_experts_per_tok, moe_topk, experts_per_token"}},
                        Case{{"hidden_size"}, {"hidden size", "hidden_size"}},
                        Case{{"moe_intermediate_size", "intermediate_size"}, {"intermediate size", "moe_intermediate_size, intermediate_size"}}}) {
    json j = full;
    for (auto* k : c.erase) j.erase(k);
    const std::string p = dir.write("missing.json", j.dump());
    std::vector<std::string> frags = c.says;
    frags.push_back(p);
    try {
      moe::tuner::load_hf_config(p);
      ADD_FAILURE() << "no error for missing " << c.erase[0];
    } catch (const moe::Error& e) {
      for (auto& f : frags) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << f << " in " << e.what();
    }
  }
  // In a nested config the message says both places were searched.
  json nested = json::parse(std::ifstream(kHf + "llama4-maverick.json"));
  nested["text_config"].erase("num_local_experts");
  const std::string p = dir.write("nested.json", nested.dump());
  expect_error([&] { moe::tuner::load_hf_config(p); }, {p, "num_local_experts", "text_config and the top level"});
}

// Qwen3-MoE (and DeepSeek, Kimi, Qwen2-MoE) keep the dense MLP's size in intermediate_size:
// without moe_intermediate_size it is not the experts' size (6144 for Qwen3-30B-A3B, 8x 768),
// so the file is refused, naming the field, instead of benchmarking the wrong shape.
TEST(ModelHfConfig, AMoeConfigWithoutItsExpertSizeIsRefusedNamingTheField) {
  TempDir dir;
  for (const char* model : {"qwen3-30b-a3b", "qwen2-moe", "deepseek-v3", "kimi-k2", "kimi-vl-a3b"}) {
    json j = json::parse(std::ifstream(kHf + std::string(model) + ".json"));
    json& scope = j.contains("text_config") ? j["text_config"] : j;
    ASSERT_TRUE(scope.contains("moe_intermediate_size")) << model;
    scope.erase("moe_intermediate_size");
    const std::string p = dir.write(std::string(model) + ".json", j.dump());
    expect_error([&] { moe::tuner::load_hf_config(p); }, {p, "has no moe_intermediate_size", "dense MLP"});
  }
  json q = json::parse(std::ifstream(kHf + "qwen3-30b-a3b.json"));
  q.erase("moe_intermediate_size");
  const std::string p = dir.write("qwen.json", q.dump());
  expect_error([&] { moe::tuner::load_hf_config(p); }, {"intermediate_size, 6144,", "qwen3_moe"});
  // Models whose experts are intermediate_size keep loading from it.
  EXPECT_EQ(moe::tuner::load_hf_config(kHf + "mixtral-8x7b.json").i("intermediate"), 14336);
  EXPECT_EQ(moe::tuner::load_hf_config(kHf + "gpt-oss-120b.json").i("intermediate"), 2880);
}

TEST(ModelHfConfig, BadValuesAreErrors) {
  TempDir dir;
  const json full = json::parse(std::ifstream(kHf + "deepseek-v3.json"));
  struct Case {
    const char* field;
    json value;
    std::string says;
  };
  for (const Case& c : {Case{"n_routed_experts", "256", "field 'n_routed_experts'"},
                        Case{"scoring_func", "sqrtsoftplus", "'sqrtsoftplus' is not supported"},
                        Case{"norm_topk_prob", "yes", "expected true or false"},
                        Case{"routed_scaling_factor", "2.5", "expected a number"},
                        Case{"n_group", 7, "does not divide experts"},
                        Case{"num_experts_per_tok", 100, "out of range"}}) {
    json j = full;
    j[c.field] = c.value;
    const std::string p = dir.write("bad.json", j.dump());
    expect_error([&] { moe::tuner::load_hf_config(p); }, {p, c.says});
  }
  const std::string arr = dir.write("array.json", "[1, 2]");
  expect_error([&] { moe::tuner::load_hf_config(arr); }, {arr, "not a JSON object"});
  expect_error([&] { moe::tuner::load_hf_config(dir.str()); }, {"is a directory"});
}

// ---------------------------------------------------------------- parallelism

TEST(ModelParallelism, TensorParallelShardsTheIntermediateSize) {
  const Params m = moe::tuner::load_model("deepseek-v3");
  const Params t8 = moe::tuner::apply_parallelism(m, 8, 1, 0);
  EXPECT_EQ(t8.i("intermediate"), 256);
  EXPECT_EQ(t8.i("experts"), 256);
  EXPECT_FALSE(t8.has("expert_begin"));
  EXPECT_FALSE(t8.has("expert_end"));
  EXPECT_EQ(moe::tuner::apply_parallelism(m, 1, 1, 0), m);
  expect_error([&] { moe::tuner::apply_parallelism(m, 3, 1, 0); }, {"--tp 3", "2048", "1, 2, 4, 8"});
  expect_error([&] { moe::tuner::apply_parallelism(m, 0, 1, 0); }, {"--tp must be at least 1"});
  // Mixtral's 14336 = 2^11 * 7: tp 7 works, tp 3 does not
  const Params mx = moe::tuner::load_model("mixtral-8x7b");
  EXPECT_EQ(moe::tuner::apply_parallelism(mx, 7, 1, 0).i("intermediate"), 2048);
  expect_error([&] { moe::tuner::apply_parallelism(mx, 3, 1, 0); }, {"--tp 3", "14336"});
}

TEST(ModelParallelism, ExpertParallelSlicesTheRoutedExperts) {
  const Params m = moe::tuner::load_model("kimi-k2");  // 384 experts + 1 shared
  for (int ep : {2, 8, 16, 384}) {
    std::int64_t next = 0;
    for (int r = 0; r < ep; ++r) {
      const Params p = moe::tuner::apply_parallelism(m, 1, ep, r);
      EXPECT_EQ(p.i("expert_begin"), next) << ep << " " << r;
      EXPECT_EQ(p.i("expert_end") - p.i("expert_begin"), 384 / ep);
      next = p.i("expert_end");
      EXPECT_EQ(p.i("experts"), 384);  // ids stay global
      EXPECT_EQ(p.i("shared"), 1);
    }
    EXPECT_EQ(next, 384);  // shared id 384 is on no rank's range
  }
  const Params both = moe::tuner::apply_parallelism(m, 4, 8, 3);
  EXPECT_EQ(both.i("intermediate"), 512);
  EXPECT_EQ(both.i("expert_begin"), 144);
  EXPECT_EQ(both.i("expert_end"), 192);
  expect_error([&] { moe::tuner::apply_parallelism(m, 1, 5, 0); }, {"--ep 5", "384 routed experts", "1, 2, 3, 4, 6, 8"});
  expect_error([&] { moe::tuner::apply_parallelism(m, 1, 8, 8); }, {"--ep-rank 8", "[0, 8)"});
  expect_error([&] { moe::tuner::apply_parallelism(m, 1, 8, -1); }, {"--ep-rank -1"});
  expect_error([&] { moe::tuner::apply_parallelism(m, 1, 0, 0); }, {"--ep must be at least 1"});
  expect_error([&] { moe::tuner::apply_parallelism(Params{}, 2, 1, 0); }, {"intermediate"});
}
