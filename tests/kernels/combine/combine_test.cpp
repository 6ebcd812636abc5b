// combine: hand-computed cases pinning the reference (both layouts, the rmsnorm epilogue and
// its rounding), every cpu config against the reference on each model preset and over the
// dtype x layout x out_dtype x epilogue matrix, NaN in unused rows never leaking, bad dst
// values (skipped by the kernels, an Error at the family layer), the cuda space.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/prepared_problems.hpp"
#include "support/described_devices.hpp"
#include "combine/backends.hpp"
#include "combine/family.hpp"
#include "common/routing_gen.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using moe::testing::described_h100;

Params problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D,
               const std::string& dtype = "bf16", const std::string& layout = "ragged",
               const std::string& out_dtype = "same", const std::string& epilogue = "none", std::int64_t A = 16) {
  return Params{{"tokens", T},      {"experts", E},   {"topk", k},          {"shared", S},
                {"hidden", D},      {"dtype", dtype}, {"layout", layout},   {"out_dtype", out_dtype},
                {"epilogue", epilogue}, {"align", A}};
}

std::vector<std::pair<std::string, Params>> presets() {
  std::vector<std::pair<std::string, Params>> r;
  for (auto& e : std::filesystem::directory_iterator(std::string(MOEBENCH_SOURCE_DIR) + "/configs/models")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in);
    r.emplace_back(e.path().stem().string(),
                   problem(1, j.at("experts"), j.at("topk"), j.at("shared"), j.at("hidden"), j.at("dtype")));
  }
  EXPECT_GE(r.size(), 8u) << "model presets missing";
  return r;
}

DeviceInfo cpu_dev() { return cpu_device_info(3); }

tuner::Prepared prep(const Params& p, TensorMap given = {}, const std::string& dist = "uniform", std::uint64_t seed = 1) {
  return moe::testing::prepare_seeded(combine_family(), p, std::move(given), dist, seed);
}

// Kernel-level tests feed inputs the family would refuse.
tuner::Prepared prep_raw(const Params& p, TensorMap inputs) { return moe::testing::prepare_raw(combine_family(), p, std::move(inputs)); }

bool all_finite(const Tensor& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) return false;
  return true;
}

// Every cpu config must match the reference, and its outputs must be finite (NaN in the
// unused rows of y must not leak; compare_close alone would let NaN == NaN pass).
void expect_all_cpu_configs(const tuner::Prepared& p, const std::string& what) {
  const BackendImpl& cpu = p.family->need_backend(Backend::cpu);
  auto configs = cpu.space(p.problem, cpu_dev(), true);
  configs.push_back(cpu.default_config(p.problem, cpu_dev()));
  for (auto& [name, t] : p.reference) EXPECT_TRUE(all_finite(t)) << what << ": reference " << name << " not finite";
  for (auto& c : configs) {
    const auto o = tuner::run_cpu(p, c, 3);
    EXPECT_TRUE(o.validation.ok) << what << " config " << c.str() << ": " << o.validation.summary();
    for (auto& [name, t] : o.outputs) EXPECT_TRUE(all_finite(t)) << what << " " << c.str() << ": " << name;
  }
}

Tensor f32_tensor(const Shape& s, std::vector<float> v) {
  Tensor t(DType::f32, s);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor i32_tensor(const Shape& s, std::vector<std::int32_t> v) {
  Tensor t(DType::i32, s);
  std::copy(v.begin(), v.end(), t.data<std::int32_t>());
  return t;
}

// y rows r = [10r, 10r+1, 10r+2, 10r+3], NaN where unused.
Tensor tiny_y(const Shape& s, const std::vector<int>& nan_rows) {
  Tensor y(DType::f32, s);
  const std::int64_t rows = y.numel() / 4;
  for (std::int64_t r = 0; r < rows; ++r)
    for (int d = 0; d < 4; ++d) y.set(r * 4 + d, 10.0 * r + d);
  for (int r : nan_rows)
    for (int d = 0; d < 4; ++d) y.set(r * 4 + d, NAN);
  return y;
}

TEST(Combine, HandComputedRaggedPinsTheReference) {
  // T=2, K=2, D=4. Slot 0 -> row 3 (w .5), slot 1 -> row 0 (w .25), slot 2 dropped (dst -1),
  // slot 3 -> row 4 with w = 0. Rows 1, 2 (padding) and 4 are NaN.
  TensorMap in;
  in.emplace("y_sorted", tiny_y({5, 4}, {1, 2, 4}));
  in.emplace("dst", i32_tensor({4}, {3, 0, -1, 4}));
  in.emplace("weights", f32_tensor({2, 2}, {0.5f, 0.25f, 2.0f, 0.0f}));
  const auto p = prep(problem(2, 4, 2, 0, 4, "f32"), std::move(in));
  const Tensor& out = p.reference.at("out");
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(out.get(d), 0.5 * (30 + d) + 0.25 * d);
    EXPECT_EQ(out.get(4 + d), 0.0);
  }
  expect_all_cpu_configs(p, "hand ragged");
  // Rows read: 2 used slots x 4 floats; dst + weights; out.
  EXPECT_DOUBLE_EQ(p.cost.bytes, 4.0 * 2 * 4 + 4.0 * 4 * 2 + 4.0 * 8);
}

TEST(Combine, HandComputedDense) {
  TensorMap in;
  in.emplace("y", tiny_y({2, 2, 4}, {3}));  // y[t,j] is row t*2+j; (1,1) has w = 0
  in.emplace("weights", f32_tensor({2, 2}, {1.0f, -2.0f, 0.5f, 0.0f}));
  const auto p = prep(problem(2, 4, 2, 0, 4, "f32", "dense"), std::move(in));
  const Tensor& out = p.reference.at("out");
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(out.get(d), 1.0 * d - 2.0 * (10 + d));
    EXPECT_EQ(out.get(4 + d), 0.5 * (20 + d));
  }
  expect_all_cpu_configs(p, "hand dense");
}

TEST(Combine, HandComputedRmsnorm) {
  TensorMap in;
  in.emplace("y_sorted", tiny_y({2, 4}, {}));
  in.emplace("dst", i32_tensor({2}, {1, 0}));
  in.emplace("weights", f32_tensor({1, 2}, {0.5f, 0.125f}));
  in.emplace("residual", f32_tensor({1, 4}, {1.0f, -2.0f, 3.0f, 0.5f}));
  in.emplace("gamma", f32_tensor({4}, {1.0f, 0.5f, 2.0f, -1.0f}));
  Params pr = problem(1, 4, 2, 0, 4, "f32", "ragged", "same", "rmsnorm");
  pr.set("eps", 0.01);
  const auto p = prep(pr, std::move(in));
  const double gamma[4] = {1.0, 0.5, 2.0, -1.0}, res[4] = {1.0, -2.0, 3.0, 0.5};
  double r[4], ss = 0;
  for (int d = 0; d < 4; ++d) r[d] = res[d] + 0.5 * (10 + d) + 0.125 * d, ss += r[d] * r[d];
  const double inv = 1.0 / std::sqrt(ss / 4 + 0.01);
  for (int d = 0; d < 4; ++d) {
    EXPECT_NEAR(p.reference.at("residual_out").get(d), r[d], 1e-6);
    EXPECT_NEAR(p.reference.at("out").get(d), r[d] * inv * gamma[d], 1e-6);
  }
  expect_all_cpu_configs(p, "hand rmsnorm");
}

TEST(Combine, RmsnormNormalisesTheResidualAsStored) {
  // bf16 residual 1 + sum 0.0029296875 = 1.0029..., which bf16 stores as 1.0 (half an ulp is
  // 2^-8). The norm must see the stored 1.0: out (f32) = 1/sqrt(1 + eps) exactly, both columns.
  Tensor y(DType::bf16, {1, 2});
  y.set(0, 0.01171875);  // 3 * 2^-8, exact in bf16
  y.set(1, 0.0);
  Tensor res(DType::bf16, {1, 2}), gamma(DType::bf16, {2});
  for (int i = 0; i < 2; ++i) res.set(i, 1.0), gamma.set(i, 1.0);
  TensorMap in;
  in.emplace("y_sorted", std::move(y));
  in.emplace("dst", i32_tensor({1}, {0}));
  in.emplace("weights", f32_tensor({1, 1}, {0.25f}));
  in.emplace("residual", std::move(res));
  in.emplace("gamma", std::move(gamma));
  const auto p = prep(problem(1, 2, 1, 0, 2, "bf16", "ragged", "f32", "rmsnorm"), std::move(in));
  const double want = 1.0 / std::sqrt(1.0 + 1e-6);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(p.reference.at("residual_out").get(d), 1.0);
    EXPECT_NEAR(p.reference.at("out").get(d), want, 1e-7);
  }
  const BackendImpl& cpu = combine_family().need_backend(Backend::cpu);
  const auto o = tuner::run_cpu(p, cpu.default_config(p.problem, cpu_dev()), 1);
  for (int d = 0; d < 2; ++d) EXPECT_NEAR(o.outputs.at("out").get(d), want, 1e-7);
}

TEST(Combine, PresetsAtSmallTokenCounts) {
  for (auto& [name, base] : presets())
    for (std::int64_t T : {1, 7, 64}) {
      Params p = base;
      p.set("tokens", T);
      if (T == 7) p.set("layout", std::string("dense"));
      if (T == 64) p.set("epilogue", std::string("rmsnorm"));
      expect_all_cpu_configs(prep(p, {}, T == 1 ? "uniform" : "zipf", 3 + T), name + " T=" + std::to_string(T));
      if (T == 64) {
        p.set("epilogue", std::string("none"));
        expect_all_cpu_configs(prep(p, {}, "uniform", 4), name + " T=64 plain");
      }
    }
}

TEST(Combine, DtypeLayoutOutputEpilogueMatrix) {
  for (const char* dt : {"f32", "bf16", "f16"})
    for (const char* layout : {"ragged", "dense"})
      for (const char* od : {"same", "f32"})
        for (const char* ep : {"none", "rmsnorm"}) {
          const std::string what = std::string(dt) + " " + layout + " out=" + od + " " + ep;
          const auto p = prep(problem(7, 16, 4, 1, 256, dt, layout, od, ep, 8), {}, "uniform", 21);
          EXPECT_EQ(p.reference.at("out").dtype(), std::string(od) == "f32" ? DType::f32 : parse_dtype(dt)) << what;
          expect_all_cpu_configs(p, what);
        }
}

TEST(Combine, EdgeShapes) {
  const std::vector<std::pair<const char*, Params>> cases = {
      {"T=1, k=1", problem(1, 8, 1, 0, 64)},
      {"E not a power of two, A=3", problem(37, 6, 3, 0, 40, "f32", "ragged", "same", "none", 3)},
      {"k = E", problem(9, 4, 4, 0, 32, "f16")},
      {"A=1", problem(50, 16, 4, 1, 24, "bf16", "ragged", "same", "none", 1)},
      {"two shared slots, rmsnorm", problem(21, 16, 6, 2, 72, "bf16", "ragged", "same", "rmsnorm")},
      {"odd hidden", problem(13, 8, 2, 1, 7, "f16", "ragged", "f32", "rmsnorm")},
      {"topk 16 of 512", problem(33, 512, 16, 0, 16, "bf16", "dense")},
      {"topk 64 + 16 shared", problem(3, 64, 64, 16, 8, "f32")},
  };
  for (auto& [what, p] : cases) expect_all_cpu_configs(prep(p, {}, "zipf", 8), what);
}

TEST(Combine, MadeInputsHaveNanInEveryUnusedRow) {
  for (const char* layout : {"ragged", "dense"}) {
    const auto p = prep(problem(40, 8, 2, 1, 16, "bf16", layout), {}, "uniform", 2);
    const Tensor& y = p.inputs.at(std::string(layout) == "dense" ? "y" : "y_sorted");
    const auto* w = p.inputs.at("weights").data<float>();
    const std::int64_t rows = y.shape()[0] * (std::string(layout) == "dense" ? 3 : 1);
    std::vector<bool> used(rows, false);
    int zero_weights = 0;
    for (std::int64_t f = 0; f < 120; ++f) {
      const std::int64_t row = std::string(layout) == "dense" ? f : p.inputs.at("dst").data<std::int32_t>()[f];
      zero_weights += w[f] == 0.0f;
      if (row >= 0 && w[f] != 0.0f) used[row] = true;
    }
    EXPECT_GT(zero_weights, 0) << layout;
    std::int64_t nan_rows = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const bool nan = std::isnan(y.get(r * 16)) && std::isnan(y.get(r * 16 + 15));
      EXPECT_EQ(nan, !used[r]) << layout << " row " << r;
      nan_rows += nan;
    }
    EXPECT_GT(nan_rows, 0) << layout;
    expect_all_cpu_configs(p, layout);
  }
}

TEST(Combine, DerivesOnlyMissingInputs) {
  // Given weights with two zeros: y_sorted and dst are made around them.
  Tensor w(DType::f32, {4, 2});
  for (int f = 0; f < 8; ++f) w.set(f, f == 2 || f == 5 ? 0.0 : 0.5);
  TensorMap given;
  given.emplace("weights", w);
  const auto p = prep(problem(4, 8, 2, 0, 16, "f16", "ragged", "same", "none", 1), std::move(given));
  EXPECT_EQ(0, std::memcmp(p.inputs.at("weights").raw(), w.raw(), w.nbytes()));
  const auto* dst = p.inputs.at("dst").data<std::int32_t>();
  EXPECT_EQ(p.inputs.at("y_sorted").shape()[0], 8);  // A=1, no EP: one row per slot
  EXPECT_TRUE(std::isnan(p.inputs.at("y_sorted").get(dst[2] * 16)));
  EXPECT_TRUE(std::isnan(p.inputs.at("y_sorted").get(dst[5] * 16)));
  EXPECT_FALSE(std::isnan(p.inputs.at("y_sorted").get(dst[0] * 16)));
  expect_all_cpu_configs(p, "derived");
}

TEST(Combine, BadGivenInputsAreClearErrors) {
  TensorMap in;
  in.emplace("y_sorted", tiny_y({3, 4}, {}));
  in.emplace("dst", i32_tensor({4}, {0, 3, -2, 1}));
  try {
    prep(problem(2, 4, 2, 0, 4, "f32"), std::move(in));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dst has 2 values outside [-1,3): first at [1] = 3"), std::string::npos)
        << e.what();
  }
  TensorMap y_only;
  y_only.emplace("y_sorted", tiny_y({1000, 4}, {}));  // cannot match the generated routing
  EXPECT_THROW(prep(problem(2, 4, 2, 0, 4, "f32"), std::move(y_only)), Error);
  TensorMap bad_w;
  bad_w.emplace("weights", f32_tensor({2, 1}, {1, 1}));
  EXPECT_THROW(prep(problem(2, 4, 2, 0, 4, "f32"), std::move(bad_w)), Error);
  EXPECT_THROW(prep(problem(2, 4, 5, 0, 4)), Error);  // topk > experts
}

TEST(Combine, KernelsSkipDstValuesOutsideTheRows) {
  // dst past the rows or below -1 must be skipped by every implementation, never followed.
  TensorMap in;
  in.emplace("y_sorted", tiny_y({3, 4}, {2}));
  in.emplace("dst", i32_tensor({6}, {0, 3, 1000, -5, 1, 2}));
  in.emplace("weights", f32_tensor({3, 2}, {0.5f, 1.f, 1.f, 1.f, 0.25f, 0.f}));
  const auto p = prep_raw(problem(3, 4, 2, 0, 4, "f32"), std::move(in));
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(p.reference.at("out").get(d), 0.5 * d);
    EXPECT_EQ(p.reference.at("out").get(4 + d), 0.0);
    EXPECT_EQ(p.reference.at("out").get(8 + d), 0.25 * (10 + d));
  }
  expect_all_cpu_configs(p, "bad dst");
}

TEST(Combine, CpuIsDeterministicAcrossThreadCounts) {
  const auto p = prep(problem(100, 32, 8, 1, 96, "bf16", "ragged", "same", "rmsnorm"), {}, "zipf", 5);
  const BackendImpl& cpu = combine_family().need_backend(Backend::cpu);
  const Params c = cpu.default_config(p.problem, cpu_dev());
  const auto a = tuner::run_cpu(p, c, 1), b = tuner::run_cpu(p, c, 4);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(0, std::memcmp(t.raw(), b.outputs.at(name).raw(), t.nbytes())) << name;
}

TEST(Combine, CpuRmsnormRejectsSplitRows) {
  const Params p = complete(combine_family().problem_params, problem(4, 8, 2, 0, 64, "bf16", "ragged", "same", "rmsnorm"), "t");
  EXPECT_THROW(tuner::complete_config(combine_family(), Backend::cpu, p, Params{{"d_split", std::int64_t{2}}}, cpu_dev()),
               Error);
}

TEST(Combine, CudaSpaceIsValid) {
  const BackendImpl& cuda = combine_family().need_backend(Backend::cuda);
  const auto& params = combine_family().problem_params;
  for (auto& [name, base] : presets())
    for (const char* ep : {"none", "rmsnorm"}) {
      const Params p = complete(params, Params(base).set("tokens", std::int64_t{64}).set("epilogue", std::string(ep)), "t");
      for (bool full : {false, true}) {
        const auto space = cuda.space(p, described_h100(), full);
        ASSERT_FALSE(space.empty()) << name;
        for (auto& c : space) EXPECT_EQ(cuda.invalid_reason(p, c, described_h100()), "") << name << " " << c.str();
      }
      EXPECT_EQ(tuner::complete_config(combine_family(), Backend::cuda, p, {}, described_h100()).i("vec"), 16) << name;
    }
  // gpt-oss D=2880 bf16: 8-element vectors divide it; D=7 f16 only scalar loads; f32 never 2 bytes.
  const Params odd = complete(params, problem(3, 8, 2, 0, 7, "f16"), "t");
  for (auto& c : cuda.space(odd, described_h100(), true)) EXPECT_EQ(c.i("vec"), 2);
  const Params f32 = complete(params, problem(3, 8, 2, 0, 6, "f32"), "t");
  for (auto& c : cuda.space(f32, described_h100(), true)) EXPECT_TRUE(c.i("vec") == 8 || c.i("vec") == 4) << c.str();
  EXPECT_NE(cuda.invalid_reason(f32, Params{{"threads", std::int64_t{128}}, {"tokens_per_cta", std::int64_t{8}},
                                            {"vec", std::int64_t{8}}}, described_h100()), "");
}

}  // namespace
