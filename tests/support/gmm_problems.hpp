#pragma once
// gmm problems for the cpu, emulation and GPU tests: explicit shapes, model presets read
// straight from configs/models, and seeded inputs.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/dtype.hpp"
#include "moe/family.hpp"

namespace moe::testing {

// Offsets and other small int32 inputs given by value.
inline Tensor i32_tensor(const std::vector<std::int32_t>& v) {
  Tensor t(DType::i32, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.data<std::int32_t>()[i] = v[i];
  return t;
}

// A small bf16 tensor given by value (each value rounded to bf16 as it is stored).
inline Tensor bf16_tensor(Shape shape, const std::vector<double>& v) {
  Tensor t(DType::bf16, std::move(shape));
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
  return t;
}

// v as bf16 stores it: what a hand-computed expectation of a bf16 output is rounded to.
inline double bf16_rounded(double v) { return bf16_to_float(float_to_bf16(static_cast<float>(v))); }

inline Params gmm_problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D,
                          std::int64_t I, std::int64_t A, const std::string& stage = "up",
                          const std::string& dtype = "bf16") {
  return Params{{"tokens", T}, {"experts", E},      {"topk", k},  {"shared", S},       {"hidden", D},
                {"intermediate", I}, {"align", A}, {"stage", stage}, {"dtype", dtype}};
}

// An fp8 gmm problem in a scale format; down takes the routed weight.
inline Params fp8_gmm_problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t D, std::int64_t I,
                              std::int64_t A, const std::string& stage, const std::string& fmt = "fp32") {
  Params p = gmm_problem(T, E, k, 0, D, I, A, stage, "fp8");
  p.set("scale_fmt", fmt);
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return p;
}

inline InputOptions seeded(std::uint64_t seed, const std::string& dist = "uniform") {
  InputOptions o;
  o.seed = seed;
  o.dist = dist;
  return o;
}

// The gmm parameters of a model preset.
inline Params gmm_preset(const std::string& name) {
  std::ifstream in(std::string(MOEBENCH_SOURCE_DIR) + "/configs/models/" + name + ".json");
  EXPECT_TRUE(in.good()) << name;
  const auto j = nlohmann::json::parse(in);
  Params p;
  for (const char* key : {"experts", "topk", "shared", "hidden", "intermediate"})
    p.set(key, j.at(key).get<std::int64_t>());
  p.set("dtype", j.at("dtype").get<std::string>());
  return p;
}

inline const std::vector<std::string> kPresets = {"deepseek-v3",     "gpt-oss-120b", "kimi-k2",         "kimi-vl-a3b",
                                                  "llama4-maverick", "mixtral-8x7b", "qwen3-235b-a22b", "qwen3-30b-a3b"};

}  // namespace moe::testing
