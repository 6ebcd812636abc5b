// dispatch: hand-computed cases pinning the reference, properties of the maps on random
// routing, every cpu config against the reference on each model preset and on edge shapes,
// out-of-range ids (dropped by the kernels, an Error at the family layer), the cuda space.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/prepared_problems.hpp"
#include "support/described_devices.hpp"
#include "common/routing_gen.hpp"
#include "dispatch/backends.hpp"
#include "dispatch/cuda_launch.hpp"
#include "dispatch/family.hpp"
#include "dispatch/plan.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using moe::testing::described_h100;

Params problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D,
               const std::string& dtype = "bf16", std::int64_t A = 16) {
  return Params{{"tokens", T}, {"experts", E}, {"topk", k}, {"shared", S}, {"hidden", D}, {"dtype", dtype}, {"align", A}};
}

struct Preset {
  std::string name;
  Params p;
};

std::vector<Preset> presets() {
  std::vector<Preset> r;
  for (auto& e : std::filesystem::directory_iterator(std::string(MOEBENCH_SOURCE_DIR) + "/configs/models")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in);
    r.push_back({e.path().stem().string(),
                 problem(1, j.at("experts"), j.at("topk"), j.at("shared"), j.at("hidden"), j.at("dtype"))});
  }
  EXPECT_GE(r.size(), 8u) << "model presets missing";
  return r;
}

DeviceInfo cpu_dev() { return cpu_device_info(3); }

// Every cpu config (the full space and the default) must reproduce the reference bit for bit.
void expect_all_cpu_configs(const tuner::Prepared& p, const std::string& what) {
  const BackendImpl& cpu = p.family->need_backend(Backend::cpu);
  auto configs = cpu.space(p.problem, cpu_dev(), true);
  configs.push_back(cpu.default_config(p.problem, cpu_dev()));
  ASSERT_FALSE(configs.empty());
  for (auto& c : configs) {
    const auto o = tuner::run_cpu(p, c, 3);
    EXPECT_TRUE(o.validation.ok) << what << " config " << c.str() << ": " << o.validation.summary();
  }
}

tuner::Prepared prep(const Params& p, TensorMap given = {}, const std::string& dist = "uniform", std::uint64_t seed = 1) {
  return moe::testing::prepare_seeded(dispatch_family(), p, std::move(given), dist, seed);
}

// Kernel-level tests feed inputs the family would refuse.
tuner::Prepared prep_raw(const Params& p, TensorMap inputs) { return moe::testing::prepare_raw(dispatch_family(), p, std::move(inputs)); }

Tensor ids_tensor(std::int64_t T, std::int64_t K, std::vector<std::int32_t> v) {
  Tensor t(DType::i32, {T, K});
  std::copy(v.begin(), v.end(), t.data<std::int32_t>());
  return t;
}

std::vector<std::int32_t> ints(const Tensor& t) {
  return {t.data<std::int32_t>(), t.data<std::int32_t>() + t.numel()};
}

// Holds for any routing: segments padded to A, rows of an expert in ascending slot order
// followed by padding, src and dst inverse, x_sorted rows copied from the right token.
void expect_map_properties(const tuner::Prepared& p) {
  const DispatchSpec s = DispatchSpec::parse(p.problem);
  const ExpertRange range{s.E_total, s.e0, s.e1, s.A};
  const auto off = ints(p.reference.at("offsets")), src = ints(p.reference.at("src")), dst = ints(p.reference.at("dst"));
  const auto* ids = p.inputs.at("ids").data<std::int32_t>();
  ASSERT_EQ(off.front(), 0);
  ASSERT_EQ(off.back(), static_cast<std::int64_t>(src.size()));
  std::vector<std::int64_t> counts(s.local(), 0);
  for (std::int64_t f = 0; f < s.slots(); ++f)
    if (range.local(ids[f]) >= 0) counts[range.local(ids[f])]++;
  for (std::int64_t e = 0; e < s.local(); ++e) {
    EXPECT_EQ((off[e + 1] - off[e]) % s.A, 0);
    EXPECT_EQ(off[e + 1] - off[e], (counts[e] + s.A - 1) / s.A * s.A) << "expert " << e;
    std::int32_t prev = -1;
    for (std::int64_t r = off[e]; r < off[e + 1]; ++r) {
      if (r - off[e] < counts[e]) {
        ASSERT_GE(src[r], 0);
        EXPECT_GT(src[r], prev) << "rows of expert " << e << " not in ascending slot order";
        EXPECT_EQ(range.local(ids[src[r]]), e);
        EXPECT_EQ(dst[src[r]], r);
        prev = src[r];
      } else {
        EXPECT_EQ(src[r], -1) << "padding row " << r;
      }
    }
  }
  for (std::int64_t f = 0; f < s.slots(); ++f)
    if (range.local(ids[f]) < 0) EXPECT_EQ(dst[f], -1);
  const Tensor& x = p.inputs.at("x");
  const Tensor& xs = p.reference.at("x_sorted");
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(src.size()); ++r)
    for (std::int64_t d = 0; d < s.D; d += std::max<std::int64_t>(1, s.D / 7)) {
      const double want = src[r] >= 0 ? x.get((src[r] / s.K) * s.D + d) : 0.0;
      ASSERT_EQ(xs.get(r * s.D + d), want) << "row " << r << " col " << d;
    }
}

TEST(Dispatch, HandComputedTinyPinsTheReference) {
  // T=3, K=2, E=4, A=4. Slots f: 0:e1 1:e3 2:e1 3:e0 4:e3 5:e1.
  TensorMap given;
  given.emplace("ids", ids_tensor(3, 2, {1, 3, 1, 0, 3, 1}));
  const auto p = prep(problem(3, 4, 2, 0, 8, "f32", 4), std::move(given));
  EXPECT_EQ(ints(p.reference.at("offsets")), (std::vector<std::int32_t>{0, 4, 8, 8, 12}));
  EXPECT_EQ(ints(p.reference.at("src")), (std::vector<std::int32_t>{3, -1, -1, -1, 0, 2, 5, -1, 1, 4, -1, -1}));
  EXPECT_EQ(ints(p.reference.at("dst")), (std::vector<std::int32_t>{4, 8, 5, 0, 9, 6}));
  const Tensor& x = p.inputs.at("x");
  const Tensor& xs = p.reference.at("x_sorted");
  const std::int32_t token_of_row[12] = {1, -1, -1, -1, 0, 1, 2, -1, 0, 2, -1, -1};
  for (int r = 0; r < 12; ++r)
    for (int d = 0; d < 8; ++d) EXPECT_EQ(xs.get(r * 8 + d), token_of_row[r] < 0 ? 0.0 : x.get(token_of_row[r] * 8 + d));
  expect_all_cpu_configs(p, "hand");
  // ids 4 + dst 4 per slot + src 4 per row + offsets; 6 x rows read, 12 written, 8 floats each.
  EXPECT_DOUBLE_EQ(p.cost.bytes, 4.0 * (6 + 6 + 12 + 5) + 4.0 * 8 * (6 + 12));
}

TEST(Dispatch, HandComputedLocalRange) {
  // The same routing on an EP rank owning experts [1, 3), A=1: expert 1 has f0,f2,f5, expert 2 none.
  TensorMap given;
  given.emplace("ids", ids_tensor(3, 2, {1, 3, 1, 0, 3, 1}));
  Params p = problem(3, 4, 2, 0, 8, "f16", 1);
  p.set("expert_begin", std::int64_t{1}).set("expert_end", std::int64_t{3});
  const auto r = prep(p, std::move(given));
  EXPECT_EQ(ints(r.reference.at("offsets")), (std::vector<std::int32_t>{0, 3, 3}));
  EXPECT_EQ(ints(r.reference.at("src")), (std::vector<std::int32_t>{0, 2, 5}));
  EXPECT_EQ(ints(r.reference.at("dst")), (std::vector<std::int32_t>{0, -1, 1, -1, -1, 2}));
  expect_all_cpu_configs(r, "hand EP");
}

TEST(Dispatch, PresetsAtSmallTokenCounts) {
  for (auto& m : presets())
    for (std::int64_t T : {1, 7, 64}) {
      Params p = m.p;
      p.set("tokens", T);
      const auto r = prep(p, {}, T == 7 ? "zipf" : "uniform", 11 + T);
      expect_map_properties(r);
      expect_all_cpu_configs(r, m.name + " T=" + std::to_string(T));
    }
}

TEST(Dispatch, EdgeShapes) {
  struct Case {
    const char* what;
    Params p;
  };
  auto ep = [](Params p, std::int64_t b, std::int64_t e) { return p.set("expert_begin", b).set("expert_end", e); };
  const std::vector<Case> cases = {
      {"T=1", problem(1, 8, 2, 0, 64)},
      {"E not a power of two, A=3", problem(37, 6, 3, 0, 40, "f32", 3)},
      {"k = E", problem(9, 4, 4, 0, 32, "f16", 2)},
      {"most experts get no token", problem(2, 64, 2, 0, 32, "bf16", 8)},
      {"A=1", problem(50, 16, 4, 1, 24, "bf16", 1)},
      {"A larger than any count", problem(5, 8, 2, 0, 16, "f32", 64)},
      {"EP range in the middle", ep(problem(40, 32, 4, 1, 48, "bf16", 4), 10, 20)},
      {"EP range of the shared experts only", ep(problem(12, 8, 2, 2, 16, "f16", 4), 8, 10)},
      {"EP range with one expert", ep(problem(30, 8, 2, 0, 16, "f32", 2), 7, 8)},
      {"two shared slots", problem(21, 16, 6, 2, 72, "bf16", 16)},
      {"odd hidden, f16", problem(13, 8, 2, 1, 7, "f16", 4)},
      {"odd hidden, bf16", problem(13, 8, 2, 1, 9, "bf16", 1)},
      {"topk 16 of 512 experts", problem(33, 512, 16, 0, 16, "bf16", 16)},
  };
  for (auto& c : cases)
    for (const char* dist : {"uniform", "zipf"}) {
      const auto r = prep(c.p, {}, dist, 5);
      expect_map_properties(r);
      expect_all_cpu_configs(r, std::string(c.what) + " " + dist);
    }
}

TEST(Dispatch, AllDtypesAreByteExactCopies) {
  for (const char* dt : {"f32", "bf16", "f16"}) {
    const auto r = prep(problem(17, 8, 2, 1, 33, dt, 4), {}, "uniform", 3);
    EXPECT_EQ(r.reference.at("x_sorted").dtype(), parse_dtype(dt));
    expect_map_properties(r);
    expect_all_cpu_configs(r, dt);
  }
}

TEST(Dispatch, OutOfRangeIdsAreDroppedByEveryImplementation) {
  // E=4, S=1: valid ids are [0,5). Negative, too large, INT_MIN/INT_MAX must all be dropped.
  const std::int64_t T = 6, K = 3;
  Tensor ids = ids_tensor(T, K, {0, -1, 4, 5, 2, 4, INT_MIN, 3, 4, 1, INT_MAX, 4, 2, 2, 4, 1000, -7, 4});
  Rng rng(3);
  for (auto [b, e] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, -1}, {1, 4}}) {
    TensorMap in;
    in.emplace("ids", ids);
    in.emplace("x", random_tensor(DType::bf16, {T, 16}, rng));
    Params p = problem(T, 4, 2, 1, 16, "bf16", 2);
    p.set("expert_begin", b).set("expert_end", e);
    const auto r = prep_raw(p, std::move(in));
    const auto dst = ints(r.reference.at("dst"));
    for (std::int64_t f = 0; f < T * K; ++f) {
      const std::int32_t id = ids.data<std::int32_t>()[f];
      if (id < 0 || id >= 5) EXPECT_EQ(dst[f], -1) << "slot " << f << " id " << id;
    }
    expect_map_properties(r);
    expect_all_cpu_configs(r, "out-of-range ids");
  }
}

TEST(Dispatch, GivenOutOfRangeIdsAreAClearError) {
  TensorMap given;
  given.emplace("ids", ids_tensor(2, 3, {0, 7, 4, 1, -2, 4}));
  try {
    prep(problem(2, 4, 2, 1, 8), std::move(given));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ids has 2 values outside [0,5): first at [0,1] = 7"), std::string::npos)
        << e.what();
  }
  TensorMap wrong_shape;
  wrong_shape.emplace("ids", ids_tensor(2, 2, {0, 1, 2, 3}));
  EXPECT_THROW(prep(problem(2, 4, 2, 1, 8), std::move(wrong_shape)), Error);
}

TEST(Dispatch, ProblemChecks) {
  EXPECT_THROW(prep(problem(4, 4, 5, 0, 8)), Error);  // topk > experts
  Params p = problem(4, 8, 2, 1, 8);
  EXPECT_THROW(prep(Params(p).set("expert_begin", std::int64_t{5}).set("expert_end", std::int64_t{5})), Error);
  EXPECT_THROW(prep(Params(p).set("expert_end", std::int64_t{10})), Error);  // E_total is 9
  EXPECT_NO_THROW(prep(Params(p).set("expert_begin", std::int64_t{8}).set("expert_end", std::int64_t{9})));
}

TEST(Dispatch, DropsEveryRowWhenNothingIsLocal) {
  // Only routed experts 0..3 exist in ids; the rank owns [4, 6): no rows at all.
  TensorMap given;
  given.emplace("ids", ids_tensor(2, 2, {0, 1, 2, 3}));
  Params p = problem(2, 6, 2, 0, 8, "f32", 4);
  p.set("expert_begin", std::int64_t{4}).set("expert_end", std::int64_t{6});
  const auto r = prep(p, std::move(given));
  EXPECT_EQ(r.reference.at("src").numel(), 0);
  EXPECT_EQ(ints(r.reference.at("dst")), (std::vector<std::int32_t>{-1, -1, -1, -1}));
  expect_all_cpu_configs(r, "empty");
}

TEST(Dispatch, CpuIsDeterministicAcrossThreadCounts) {
  const auto r = prep(problem(300, 64, 8, 1, 40, "bf16", 16), {}, "zipf", 9);
  const BackendImpl& cpu = dispatch_family().need_backend(Backend::cpu);
  const Params c = cpu.default_config(r.problem, cpu_dev());
  const auto a = tuner::run_cpu(r, c, 1), b = tuner::run_cpu(r, c, 4);
  for (auto& [name, t] : a.outputs)
    EXPECT_EQ(0, std::memcmp(t.raw(), b.outputs.at(name).raw(), t.nbytes())) << name;
}

TEST(Dispatch, CudaSpaceIsValidAndRespectsLimits) {
  const BackendImpl& cuda = dispatch_family().need_backend(Backend::cuda);
  for (auto& m : presets())
    for (std::int64_t T : {1, 64, 4096, 16384}) {
      Params p = complete(dispatch_family().problem_params, Params(m.p).set("tokens", T), "t");
      for (bool full : {false, true}) {
        const auto space = cuda.space(p, described_h100(), full);
        ASSERT_FALSE(space.empty()) << m.name;
        for (auto& c : space) {
          EXPECT_EQ(cuda.invalid_reason(p, c, described_h100()), "") << m.name << " " << c.str();
          if (c.s("aligner") == "single") EXPECT_LE(T * (m.p.i("topk") + m.p.i("shared")), dispatch_cuda::kSingleMaxSlots);
        }
      }
      const Params def = tuner::complete_config(dispatch_family(), Backend::cuda, p, {}, described_h100());
      EXPECT_EQ(def.s("aligner"), T <= 256 ? "single" : "multi") << m.name << " T=" << T;
      EXPECT_EQ(def.i("vec"), 16);
    }
  // Rows of 14 bytes (f16, D=7) take only 2-byte vectors.
  const Params odd = complete(dispatch_family().problem_params, problem(5, 8, 2, 0, 7, "f16"), "t");
  for (auto& c : cuda.space(odd, described_h100(), true)) EXPECT_EQ(c.i("vec"), 2);
  Params bad = cuda.default_config(odd, described_h100());
  EXPECT_NE(cuda.invalid_reason(odd, bad.set("vec", std::int64_t{16}), described_h100()), "");
  // Thousands of local experts: the single-CTA aligner no longer fits in shared memory.
  const Params wide = complete(dispatch_family().problem_params, problem(4, 4096, 8, 16, 256), "t");
  for (auto& c : cuda.space(wide, described_h100(), true)) EXPECT_EQ(c.s("aligner"), "multi");
  EXPECT_GT(cuda.workspace_bytes(wide, cuda.default_config(wide, described_h100())), 0u);
}

}  // namespace
