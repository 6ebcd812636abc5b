// dispatch and combine on the GPU: every cuda config against the reference on the model
// presets and edge shapes (bitwise for dispatch), out-of-range ids / dst values dropped,
// determinism (two runs, identical bits) and NaN in unused rows never leaking. Speed is
// measured by benchmarks (scripts/gpu-targets.sh), not here.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "require_gpu.hpp"
#include "support/prepared_problems.hpp"
#include "combine/family.hpp"
#include "common/routing_gen.hpp"
#include "dispatch/cuda_launch.hpp"
#include "dispatch/family.hpp"
#include "dispatch/plan.hpp"
#include "dispatch/spec.hpp"
#include "moe/cuda_device.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;


DeviceInfo gpu() {
  static const DeviceInfo d = cuda_device_info(0);
  return d;
}

Params dproblem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D,
                const std::string& dtype = "bf16", std::int64_t A = 16) {
  return Params{{"tokens", T}, {"experts", E}, {"topk", k}, {"shared", S}, {"hidden", D}, {"dtype", dtype}, {"align", A}};
}

Params cproblem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D,
                const std::string& dtype = "bf16", const std::string& layout = "ragged",
                const std::string& out_dtype = "same", const std::string& epilogue = "none", std::int64_t A = 16) {
  return Params{{"tokens", T},      {"experts", E},   {"topk", k},        {"shared", S},
                {"hidden", D},      {"dtype", dtype}, {"layout", layout}, {"out_dtype", out_dtype},
                {"epilogue", epilogue}, {"align", A}};
}

std::vector<std::pair<std::string, nlohmann::json>> presets() {
  std::vector<std::pair<std::string, nlohmann::json>> r;
  for (auto& e : std::filesystem::directory_iterator(std::string(MOEBENCH_SOURCE_DIR) + "/configs/models")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    r.emplace_back(e.path().stem().string(), nlohmann::json::parse(in));
  }
  return r;
}

tuner::Prepared prep(const FamilyDesc& f, const Params& p, const std::string& dist = "uniform", std::uint64_t seed = 1,
                     TensorMap given = {}) {
  return moe::testing::prepare_seeded(f, p, std::move(given), dist, seed);
}

// Inputs the family layer would refuse (out-of-range ids, bad dst).
tuner::Prepared prep_raw(const FamilyDesc& f, const Params& p, TensorMap inputs) {
  return moe::testing::prepare_raw(f, p, std::move(inputs));
}

bool all_finite(const Tensor& t) {
  if (!is_float(t.dtype())) return true;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) return false;
  return true;
}

bool same_bits(const TensorMap& a, const TensorMap& b) {
  for (auto& [k, t] : a)
    if (!b.count(k) || t.nbytes() != b.at(k).nbytes() || std::memcmp(t.raw(), b.at(k).raw(), t.nbytes())) return false;
  return true;
}

// Every config of the space (and the default) validated against the reference; outputs finite.
void expect_all_cuda_configs(const tuner::Prepared& p, bool full, const std::string& what) {
  const BackendImpl& cuda = p.family->need_backend(Backend::cuda);
  auto configs = cuda.space(p.problem, gpu(), full);
  ASSERT_FALSE(configs.empty()) << what;
  configs.push_back(cuda.default_config(p.problem, gpu()));
  for (auto& c : configs) {
    tuner::Outcome o;
    try {
      o = tuner::run_cuda(p, c, gpu());
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " config " << c.str() << " threw: " << e.what();
      continue;
    }
    EXPECT_TRUE(o.validation.ok) << what << " config " << c.str() << ": " << o.validation.summary();
    for (auto& [name, t] : o.outputs) EXPECT_TRUE(all_finite(t)) << what << " " << c.str() << ": " << name << " has NaN";
  }
}

void expect_deterministic(const tuner::Prepared& p, const std::string& what) {
  const BackendImpl& cuda = p.family->need_backend(Backend::cuda);
  auto configs = cuda.space(p.problem, gpu(), false);
  configs.push_back(cuda.default_config(p.problem, gpu()));
  for (auto& c : configs) {
    const auto a = tuner::run_cuda(p, c, gpu()), b = tuner::run_cuda(p, c, gpu());
    EXPECT_TRUE(a.validation.ok) << what << " " << c.str() << ": " << a.validation.summary();
    EXPECT_TRUE(same_bits(a.outputs, b.outputs)) << what << " config " << c.str() << " differs between runs";
  }
}

// ---------------------------------------------------------------- dispatch

TEST(DispatchGpu, PresetsMatchTheReferenceBitwise) {
  REQUIRE_GPU();
  for (auto& [name, j] : presets())
    for (std::int64_t T : {1, 7, 64, 300}) {
      const Params p = dproblem(T, j.at("experts"), j.at("topk"), j.at("shared"), j.at("hidden"), j.at("dtype"));
      expect_all_cuda_configs(prep(dispatch_family(), p, T == 64 ? "zipf" : "uniform", T), T == 7,
                              name + " T=" + std::to_string(T));
    }
}

TEST(DispatchGpu, EdgeShapes) {
  REQUIRE_GPU();
  auto ep = [](Params p, std::int64_t b, std::int64_t e) { return p.set("expert_begin", b).set("expert_end", e); };
  const std::vector<std::pair<const char*, Params>> cases = {
      {"T=1", dproblem(1, 8, 2, 0, 64)},
      {"E not a power of two, A=3", dproblem(37, 6, 3, 0, 40, "f32", 3)},
      {"k = E", dproblem(9, 4, 4, 0, 32, "f16", 2)},
      {"most experts get no token", dproblem(2, 64, 2, 0, 32, "bf16", 8)},
      {"A=1", dproblem(50, 16, 4, 1, 24, "bf16", 1)},
      {"A=128", dproblem(50, 16, 4, 1, 24, "bf16", 128)},
      {"EP range in the middle", ep(dproblem(40, 32, 4, 1, 48, "bf16", 4), 10, 20)},
      {"EP range of the shared experts only", ep(dproblem(12, 8, 2, 2, 16, "f16", 4), 8, 10)},
      {"EP range with one expert", ep(dproblem(30, 8, 2, 0, 16, "f32", 2), 7, 8)},
      {"two shared slots", dproblem(21, 16, 6, 2, 72, "bf16", 16)},
      {"odd hidden, f16", dproblem(13, 8, 2, 1, 7, "f16", 4)},
      {"hidden 2880 (gpt-oss)", dproblem(33, 128, 4, 0, 2880, "bf16", 16)},
      {"topk 16 of 512 experts", dproblem(33, 512, 16, 0, 16, "bf16", 16)},
      {"topk 64 + 16 shared", dproblem(5, 64, 64, 16, 16, "f32", 4)},
      {"4096 experts + 16 shared", dproblem(64, 4096, 8, 16, 32, "bf16", 16)},
  };
  for (auto& [what, p] : cases)
    for (const char* dist : {"uniform", "zipf"}) expect_all_cuda_configs(prep(dispatch_family(), p, dist, 5), true, what);
}

TEST(DispatchGpu, ManySlotsUseTheMultiCtaAligner) {
  REQUIRE_GPU();
  // 131072 slots (T=16384, K=8), hot experts under zipf; small D keeps the copy cheap.
  for (const char* dist : {"uniform", "zipf"}) {
    const auto p = prep(dispatch_family(), dproblem(16384, 256, 8, 0, 64, "bf16", 16), dist, 7);
    expect_all_cuda_configs(p, false, std::string("T=16384 ") + dist);
    expect_deterministic(p, std::string("T=16384 ") + dist);
  }
  auto ep = dproblem(8192, 384, 8, 1, 64, "f16", 64);
  ep.set("expert_begin", std::int64_t{96}).set("expert_end", std::int64_t{192});
  expect_all_cuda_configs(prep(dispatch_family(), ep, "zipf", 8), false, "kimi-like EP");
  // The single-CTA aligner's largest problem.
  const auto edge = prep(dispatch_family(), dproblem(dispatch_cuda::kSingleMaxSlots / 8, 128, 8, 0, 32), "zipf", 9);
  bool single_seen = false;
  for (auto& c : dispatch_family().need_backend(Backend::cuda).space(edge.problem, gpu(), true)) {
    if (c.s("aligner") != "single") continue;
    single_seen = true;
    const auto o = tuner::run_cuda(edge, c, gpu());
    EXPECT_TRUE(o.validation.ok) << c.str() << ": " << o.validation.summary();
  }
  EXPECT_TRUE(single_seen);
}

TEST(DispatchGpu, OutOfRangeIdsAreDropped) {
  REQUIRE_GPU();
  const std::int64_t T = 6, K = 3;
  Tensor ids(DType::i32, {T, K});
  const std::int32_t v[] = {0, -1, 4, 5, 2, 4, INT_MIN, 3, 4, 1, INT_MAX, 4, 2, 2, 4, 1000, -7, 4};
  std::copy(std::begin(v), std::end(v), ids.data<std::int32_t>());
  Rng rng(3);
  for (auto [b, e] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, -1}, {1, 4}}) {
    TensorMap in;
    in.emplace("ids", ids);
    in.emplace("x", random_tensor(DType::bf16, {T, 16}, rng));
    Params p = dproblem(T, 4, 2, 1, 16, "bf16", 2);
    p.set("expert_begin", b).set("expert_end", e);
    expect_all_cuda_configs(prep_raw(dispatch_family(), p, std::move(in)), true, "out-of-range ids");
  }
  // Every id out of range on a bigger problem: no rows at all, every dst -1.
  Tensor bad(DType::i32, {512, 8});
  for (std::int64_t i = 0; i < bad.numel(); ++i) bad.data<std::int32_t>()[i] = i % 2 ? -3 : 1 << 20;
  TensorMap in;
  in.emplace("ids", bad);
  in.emplace("x", random_tensor(DType::f16, {512, 32}, rng));
  expect_all_cuda_configs(prep_raw(dispatch_family(), dproblem(512, 16, 8, 0, 32, "f16", 4), std::move(in)), false,
                          "all ids out of range");
}

TEST(DispatchGpu, Deterministic) {
  REQUIRE_GPU();
  expect_deterministic(prep(dispatch_family(), dproblem(2048, 64, 8, 1, 128, "bf16", 16), "zipf", 4), "T=2048");
  expect_deterministic(prep(dispatch_family(), dproblem(3, 8, 2, 0, 128, "f32", 4), "uniform", 4), "T=3");
}

TEST(DispatchGpu, LargeGatherShape) {
  REQUIRE_GPU();
  // The bandwidth target's shape (DeepSeek-like, T=4096, K=8, D=7168 bf16).
  expect_all_cuda_configs(prep(dispatch_family(), dproblem(4096, 256, 8, 0, 7168, "bf16", 16), "uniform", 2), false,
                          "T=4096 D=7168");
}

// ---------------------------------------------------------------- combine

TEST(CombineGpu, PresetsMatchTheReference) {
  REQUIRE_GPU();
  for (auto& [name, j] : presets())
    for (std::int64_t T : {1, 7, 64})
      for (const char* variant : {"ragged", "dense", "rmsnorm"}) {
        const std::string layout = std::string(variant) == "dense" ? "dense" : "ragged";
        const std::string ep = std::string(variant) == "rmsnorm" ? "rmsnorm" : "none";
        const Params p = cproblem(T, j.at("experts"), j.at("topk"), j.at("shared"), j.at("hidden"), j.at("dtype"),
                                  layout, "same", ep);
        expect_all_cuda_configs(prep(combine_family(), p, "zipf", T), T == 7,
                                name + " T=" + std::to_string(T) + " " + variant);
      }
}

TEST(CombineGpu, DtypeLayoutOutputEpilogueMatrix) {
  REQUIRE_GPU();
  for (const char* dt : {"f32", "bf16", "f16"})
    for (const char* layout : {"ragged", "dense"})
      for (const char* od : {"same", "f32"})
        for (const char* ep : {"none", "rmsnorm"})
          for (std::int64_t D : {256, 2880, 1000}) {
            const std::string what = std::string(dt) + " " + layout + " out=" + od + " " + ep + " D=" + std::to_string(D);
            expect_all_cuda_configs(prep(combine_family(), cproblem(37, 16, 4, 1, D, dt, layout, od, ep, 8), "uniform", 21),
                                    true, what);
          }
}

TEST(CombineGpu, EdgeShapes) {
  REQUIRE_GPU();
  const std::vector<std::pair<const char*, Params>> cases = {
      {"T=1, k=1", cproblem(1, 8, 1, 0, 64)},
      {"odd hidden", cproblem(13, 8, 2, 1, 7, "f16", "ragged", "f32", "rmsnorm")},
      {"topk 16 of 512", cproblem(33, 512, 16, 0, 16, "bf16", "dense")},
      {"topk 64 + 16 shared", cproblem(3, 64, 64, 16, 8, "f32")},
      {"topk 64 + 16 shared, rmsnorm", cproblem(9, 64, 64, 16, 24, "bf16", "ragged", "same", "rmsnorm")},
      {"hidden 16384", cproblem(5, 16, 4, 1, 16384, "bf16", "ragged", "same", "rmsnorm")},
      {"A=1", cproblem(50, 16, 4, 1, 24, "bf16", "ragged", "same", "none", 1)},
  };
  for (auto& [what, p] : cases) expect_all_cuda_configs(prep(combine_family(), p, "zipf", 8), true, what);
}

TEST(CombineGpu, BadDstValuesAreSkipped) {
  REQUIRE_GPU();
  Rng rng(5);
  TensorMap in;
  Tensor y = random_tensor(DType::bf16, {3, 64}, rng);
  for (int d = 0; d < 64; ++d) y.set(2 * 64 + d, NAN);
  in.emplace("y_sorted", std::move(y));
  Tensor dst(DType::i32, {6});
  const std::int32_t dv[] = {0, 3, 1000, -5, 1, 2};
  std::copy(std::begin(dv), std::end(dv), dst.data<std::int32_t>());
  in.emplace("dst", std::move(dst));
  Tensor w(DType::f32, {3, 2});
  const float wv[] = {0.5f, 1.f, 1.f, 1.f, 0.25f, 0.f};
  std::copy(std::begin(wv), std::end(wv), w.data<float>());
  in.emplace("weights", std::move(w));
  expect_all_cuda_configs(prep_raw(combine_family(), cproblem(3, 4, 2, 0, 64), std::move(in)), true, "bad dst");
}

TEST(CombineGpu, Deterministic) {
  REQUIRE_GPU();
  expect_deterministic(prep(combine_family(), cproblem(512, 64, 8, 1, 2048, "bf16"), "zipf", 4), "ragged");
  expect_deterministic(prep(combine_family(), cproblem(512, 64, 8, 1, 2048, "bf16", "ragged", "f32", "rmsnorm"), "zipf", 4),
                       "rmsnorm");
}

TEST(CombineGpu, LargeShape) {
  REQUIRE_GPU();
  expect_all_cuda_configs(prep(combine_family(), cproblem(2048, 256, 8, 0, 7168), "uniform", 2), false, "T=2048 D=7168");
}

}  // namespace
