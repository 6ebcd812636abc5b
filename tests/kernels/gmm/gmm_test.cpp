// gmm family: the reference pinned by hand-computed cases, the cpu backend's every config on
// small shapes, the presets' shapes (shrunk, and real at a few local experts), edge cases,
// validation catching broken outputs, and the host-memory refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "support/gmm_problems.hpp"
#include "support/described_devices.hpp"
#include "gmm/mma/cuda_configs.hpp"
#include "gmm/detail.hpp"
#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::described_h100;
using testing::gmm_preset;
using testing::gmm_problem;
using testing::kPresets;
using testing::seeded;
using tuner::prepare;
using tuner::Prepared;
using tuner::run_cpu;

const FamilyDesc& F() { return gmm_family(); }
const BackendImpl& cpu() { return F().need_backend(Backend::cpu); }

void expect_pass(const Prepared& p, const Params& cfg, int threads = 2) {
  const auto o = run_cpu(p, cfg, threads);
  EXPECT_TRUE(o.validation.ok) << p.problem.str() << " config " << cfg.str() << ": " << o.validation.summary();
}

Params cfg(std::int64_t bm, std::int64_t bn, std::int64_t bk) {
  return Params{{"block_m", bm}, {"block_n", bn}, {"block_k", bk}};
}

using testing::bf16_tensor;
using testing::i32_tensor;

// ---- the reference, pinned by hand

TEST(GmmReference, UpByHand) {
  // x = [1, 2]; gate row [0.5, 0.25] -> g = 1; up row [1, -1] -> u = -1;
  // h = silu(1) * -1 = -0.7310585786..., whose nearest bf16 is -0.73046875.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 1});
  given["x_sorted"] = bf16_tensor({1, 2}, {1, 2});
  given["w13"] = bf16_tensor({1, 2, 2}, {0.5, 0.25, 1, -1});
  const auto p = prepare(F(), gmm_problem(1, 1, 1, 0, 2, 1, 1), seeded(1), given);
  const Tensor& h = p.reference.at("h");
  ASSERT_EQ(h.shape(), (Shape{1, 1}));
  EXPECT_EQ(h.get(0), -0.73046875);
  EXPECT_DOUBLE_EQ(p.cost.flops, 2.0 * 1 * 2 * 2);
  expect_pass(p, cfg(8, 16, 64));
}

TEST(GmmReference, DownByHandWithRoutedWeight) {
  // Two experts, one row each: y = h . w2 row, times the row's weight.
  // Expert 0: [2, -1] . [0.5, 1.5] = -0.5, * 0.25 = -0.125.  Expert 1: [1, 1] . [3, -4] = -1, * 1 = -1.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 1, 2});
  given["h"] = bf16_tensor({2, 2}, {2, -1, 1, 1});
  given["w2"] = bf16_tensor({2, 1, 2}, {0.5, 1.5, 3, -4});
  Tensor rw(DType::f32, {2});
  rw.set(0, 0.25);
  rw.set(1, 1.0);
  given["row_weight"] = rw;
  Params pr = gmm_problem(2, 2, 1, 0, 1, 2, 1, "down");
  pr.set("routed_weight", std::int64_t{1});
  const auto p = prepare(F(), pr, seeded(1), given);
  const Tensor& y = p.reference.at("y_sorted");
  EXPECT_EQ(y.get(0), -0.125);
  EXPECT_EQ(y.get(1), -1.0);
  expect_pass(p, cfg(8, 16, 64));
}

TEST(GmmReference, PaddingRowsAreZeroAndOffsetsArePadded) {
  const auto p = prepare(F(), gmm_problem(40, 8, 2, 1, 64, 48, 16), seeded(3));
  const auto* o = p.inputs.at("offsets").data<std::int32_t>();
  const std::int64_t R = p.inputs.at("x_sorted").shape()[0];
  EXPECT_EQ(o[0], 0);
  EXPECT_EQ(o[9], R);
  for (int e = 0; e < 9; ++e) EXPECT_EQ((o[e + 1] - o[e]) % 16, 0) << e;
  // The shared expert (id 8) gets every token: 40 rows padded to 48.
  EXPECT_EQ(o[9] - o[8], 48);
  const auto pad = gmm::zero_rows(p.inputs.at("x_sorted"));
  std::int64_t real = 0;
  for (std::int64_t r = 0; r < R; ++r) {
    real += pad[r] ? 0 : 1;
    for (std::int64_t j = 0; j < 48 && pad[r]; ++j) EXPECT_EQ(p.reference.at("h").get(r * 48 + j), 0.0);
  }
  EXPECT_EQ(real, 40 * 3);  // k routed + 1 shared slot per token, all local
  EXPECT_DOUBLE_EQ(p.cost.flops, 2.0 * real * 64 * 96);
  // Outputs are O(1): the weights' 1/sqrt(k) scale keeps products in range.
  double sq = 0;
  for (std::int64_t i = 0; i < p.reference.at("h").numel(); ++i) sq += std::pow(p.reference.at("h").get(i), 2);
  const double rms = std::sqrt(sq / static_cast<double>(real * 48));
  EXPECT_GT(rms, 0.1);
  EXPECT_LT(rms, 3.0);
}

TEST(GmmReference, SameSeedSameInputs) {
  const auto a = prepare(F(), gmm_problem(16, 8, 2, 0, 32, 16, 4), seeded(9));
  const auto b = prepare(F(), gmm_problem(16, 8, 2, 0, 32, 16, 4), seeded(9));
  const auto c = prepare(F(), gmm_problem(16, 8, 2, 0, 32, 16, 4), seeded(10));
  EXPECT_EQ(0, std::memcmp(a.inputs.at("w13").raw(), b.inputs.at("w13").raw(), a.inputs.at("w13").nbytes()));
  EXPECT_NE(0, std::memcmp(a.inputs.at("w13").raw(), c.inputs.at("w13").raw(), a.inputs.at("w13").nbytes()));
}

// ---- the cpu backend

TEST(GmmCpu, EveryConfigBothStagesBothDtypes) {
  // I=80 and D=96 are not multiples of the N/K tiles; align 4 and a shared expert.
  for (const char* stage : {"up", "down"})
    for (const char* dt : {"bf16", "f16"}) {
      Params pr = gmm_problem(24, 8, 2, 1, 96, 80, 4, stage, dt);
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      const auto p = prepare(F(), pr, seeded(5));
      const auto space = cpu().space(p.problem, cpu_device_info(2), true);
      ASSERT_EQ(space.size(), 80u);
      for (const auto& c : space) {
        EXPECT_EQ(cpu().invalid_reason(p.problem, c, cpu_device_info(2)), "");
        expect_pass(p, c);
      }
    }
}

TEST(GmmCpu, DefaultAndCuratedSpaceAreValid) {
  for (std::int64_t T : {1, 16, 512})
    for (int threads : {1, 2, 64}) {
      const Params pr = complete(F().problem_params, gmm_problem(T, 64, 6, 2, 128, 64, 16), "gmm");
      const auto dev = cpu_device_info(threads);
      const Params d = cpu().default_config(pr, dev);
      EXPECT_EQ(cpu().invalid_reason(pr, d, dev), "");
      const auto space = cpu().space(pr, dev, false);
      EXPECT_FALSE(space.empty());
      EXPECT_LT(space.size(), 80u);
      for (auto& c : space) EXPECT_EQ(cpu().invalid_reason(pr, c, dev), "") << c.str();
    }
  const Params pr = complete(F().problem_params, gmm_problem(1, 8, 2, 0, 64, 64, 16), "gmm");
  EXPECT_NE(cpu().invalid_reason(pr, cfg(12, 64, 128), cpu_device_info(2)), "");
  EXPECT_NE(cpu().invalid_reason(pr, cfg(16, 64, 100), cpu_device_info(2)), "");
}

TEST(GmmCpu, OffsetsBeyondWhatTheTokensCanRouteAreRefused) {
  // Split-K workspace and the layer's buffers are sized from tokens: offsets past that bound
  // would overrun them, so they are an error that names the fix.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 1, 1, 38});
  try {
    prepare(F(), gmm_problem(8, 4, 2, 0, 72, 40, 1, "up"), seeded(7), given);
    FAIL() << "offsets ending at 38 rows were accepted for 8 tokens x 2 slots";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("raise --tokens"), std::string::npos) << e.what();
  }
}

TEST(GmmCpu, EdgeSegments) {
  // Experts with 0 rows, 1 row, 37 rows (not a multiple of any block_m); then all rows on one.
  for (auto offs : std::vector<std::vector<std::int32_t>>{{0, 0, 1, 1, 38}, {0, 0, 0, 50, 50}, {0, 1, 2, 3, 4}})
    for (const char* stage : {"up", "down"}) {
      TensorMap given;
      given["offsets"] = i32_tensor(offs);
      const auto p = prepare(F(), gmm_problem(25, 4, 2, 0, 72, 40, 1, stage), seeded(7), given);
      for (auto c : {cfg(8, 16, 64), cfg(16, 32, 128), cfg(64, 128, 256)}) expect_pass(p, c);
    }
}

TEST(GmmCpu, EveryConfigOnRaggedTails) {
  // K = 100 and 37 (multiples of neither the 8 fp32 lanes nor any block_k), N = 37 and 100
  // (no multiple of block_n; up: 74 weight rows, not a multiple of the 4-row groups), segments
  // of 0, 1, 2, 4, 5 and 7 rows (tails of the 3-row register blocks), and zero rows inside and
  // at the end of segments: padding math is skipped only at the end, and every zero row, skipped
  // or computed, comes out exactly 0.
  for (const char* stage : {"up", "down"})
    for (const char* dt : {"bf16", "f16"}) {
      const bool down = std::string(stage) == "down";
      Params pr = gmm_problem(10, 6, 2, 0, 100, 37, 1, stage, dt);
      if (down) pr.set("routed_weight", std::int64_t{1});
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 3, 7, 12, 19});
      Tensor act = prepare(F(), pr, seeded(29), given).inputs.at(down ? "h" : "x_sorted");
      const std::int64_t K = act.shape()[1];
      for (std::int64_t r : {2, 4, 6, 17, 18}) std::memset(act.data<std::uint16_t>() + r * K, 0, 2 * K);
      given[down ? "h" : "x_sorted"] = act;
      const auto p = prepare(F(), pr, seeded(29), given);
      for (const auto& c : cpu().space(p.problem, cpu_device_info(2), true)) expect_pass(p, c);
    }
}

TEST(GmmCpu, ConvertsEveryFiniteValueExactly) {
  // y = 1 * w with K = 1: each output is one weight, so it must come back exactly, for every
  // finite bf16 and f16 bit pattern (subnormals and the largest values included).
  for (const char* dt : {"bf16", "f16"}) {
    const bool f16 = std::string(dt) == "f16";
    const std::uint16_t inf = f16 ? 0x7C00 : 0x7F80;
    std::vector<std::uint16_t> finite;
    for (std::uint32_t b = 0; b < 65536; ++b)
      if ((b & 0x7FFF) < inf) finite.push_back(static_cast<std::uint16_t>(b));
    const auto D = static_cast<std::int64_t>(finite.size());
    TensorMap given;
    given["offsets"] = i32_tensor({0, 1});
    Tensor h(f16 ? DType::f16 : DType::bf16, {1, 1});
    h.set(0, 1.0);
    given["h"] = h;
    Tensor w(f16 ? DType::f16 : DType::bf16, {1, D, 1});
    std::memcpy(w.raw(), finite.data(), 2 * finite.size());
    given["w2"] = w;
    const auto p = prepare(F(), gmm_problem(1, 1, 1, 0, D, 1, 1, "down", dt), seeded(1), given);
    const auto o = run_cpu(p, cfg(8, 128, 64), 2);
    const Tensor& y = o.outputs.at("y_sorted");
    std::int64_t wrong = 0;
    for (std::int64_t d = 0; d < D; ++d)
      if (y.get(d) != w.get(d) && wrong++ < 5) ADD_FAILURE() << dt << " 0x" << std::hex << finite[d] << ": got " << y.get(d);
    EXPECT_EQ(wrong, 0) << dt;
  }
}

TEST(GmmCpu, NoRowsAtAll) {
  // An expert-parallel rank that no token reached: R = 0, nothing to do, nothing to fail.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 0});
  Params pr = gmm_problem(4, 8, 2, 0, 32, 16, 8);
  pr.set("expert_begin", std::int64_t{2});
  pr.set("expert_end", std::int64_t{4});
  const auto p = prepare(F(), pr, seeded(2), given);
  EXPECT_EQ(p.reference.at("h").shape(), (Shape{0, 16}));
  expect_pass(p, cfg(16, 64, 128));
}

TEST(GmmCpu, ExpertSliceAndSkewedRouting) {
  // A local slice holding the last routed expert and both shared ones, zipf routing, align 1 and 8.
  for (std::int64_t A : {1, 8})
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_problem(48, 16, 4, 2, 64, 56, A, stage);
      pr.set("expert_begin", std::int64_t{15});
      pr.set("expert_end", std::int64_t{18});
      const auto p = prepare(F(), pr, seeded(11, "zipf"), {});
      EXPECT_EQ(p.inputs.at("offsets").numel(), 4);
      EXPECT_EQ(p.inputs.at("offsets").data<std::int32_t>()[3] - p.inputs.at("offsets").data<std::int32_t>()[1],
                2 * ((48 + A - 1) / A * A));
      expect_pass(p, cfg(16, 32, 64));
      expect_pass(p, cfg(32, 64, 128));
    }
}

TEST(GmmCpu, PresetShapesShrunk) {
  // Every preset's routing (E, k, S) with D and I cut by 16, both stages, a few configs.
  for (const auto& name : kPresets)
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_preset(name);
      pr.set("hidden", pr.i("hidden") / 16);
      pr.set("intermediate", pr.i("intermediate") / 16);
      pr.set("tokens", std::int64_t{24});
      pr.set("align", std::int64_t{4});
      pr.set("stage", std::string(stage));
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      const auto p = prepare(F(), pr, seeded(13));
      expect_pass(p, cpu().default_config(p.problem, cpu_device_info(2)));
      expect_pass(p, cfg(8, 128, 256));
    }
}

TEST(GmmCpu, PresetShapesRealSizeFewLocalExperts) {
  // The real D and I of every preset, with two local experts (as --ep would give) so the
  // weights stay small: the shared expert and its neighbour where there is one.
  for (const auto& name : kPresets)
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_preset(name);
      const std::int64_t Et = pr.i("experts") + pr.i("shared");
      pr.set("tokens", std::int64_t{pr.i("hidden") * pr.i("intermediate") > (1 << 25) ? 2 : 16});
      pr.set("align", std::int64_t{8});
      pr.set("expert_begin", pr.i("shared") > 0 ? Et - 2 : std::int64_t{0});
      pr.set("expert_end", pr.i("shared") > 0 ? Et : std::int64_t{2});
      pr.set("stage", std::string(stage));
      const auto p = prepare(F(), pr, seeded(17));
      expect_pass(p, cpu().default_config(p.problem, cpu_device_info(2)));
    }
}

// ---- validation catches what a broken kernel does

struct GmmValidation : ::testing::Test {
  Prepared p = prepare(F(), gmm_problem(32, 8, 2, 0, 64, 48, 8), seeded(21));
  tuner::Outcome good() { return run_cpu(p, cfg(16, 32, 64), 2); }
  std::int64_t first_row(bool padding) {
    const auto pad = gmm::zero_rows(p.inputs.at("x_sorted"));
    for (std::size_t r = 0; r < pad.size(); ++r)
      if (static_cast<bool>(pad[r]) == padding) return static_cast<std::int64_t>(r);
    return -1;
  }
  bool ok(const TensorMap& out) { return F().validate(p.problem, p.inputs, out, p.reference).ok; }
};

TEST_F(GmmValidation, GoodPasses) { EXPECT_TRUE(good().validation.ok) << good().validation.summary(); }

TEST_F(GmmValidation, WrongValueFails) {
  auto o = good();
  Tensor& h = o.outputs.at("h");
  const std::int64_t r = first_row(false);
  h.set(r * 48 + 5, h.get(r * 48 + 5) * 1.1 + 0.05);
  EXPECT_FALSE(ok(o.outputs));
}

TEST_F(GmmValidation, NanFails) {
  auto o = good();
  o.outputs.at("h").set(first_row(false) * 48, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(ok(o.outputs));
}

TEST_F(GmmValidation, UnwrittenFails) {
  auto o = good();
  o.outputs.at("h").data<std::uint16_t>()[7] = 0;
  poison_host(TensorRef{o.outputs.at("h").data<std::uint16_t>() + 7, DType::bf16, {1}});
  EXPECT_FALSE(ok(o.outputs));
}

TEST_F(GmmValidation, TinyValueOnPaddingRowFails) {
  const std::int64_t r = first_row(true);
  ASSERT_GE(r, 0);
  auto o = good();
  o.outputs.at("h").data<std::uint16_t>()[r * 48 + 3] = 0x0001;  // the smallest bf16 subnormal
  const auto v = F().validate(p.problem, p.inputs, o.outputs, p.reference);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.summary().find("padding"), std::string::npos) << v.summary();
}

TEST_F(GmmValidation, SwappedExpertsFail) {
  // A kernel that used the wrong expert's weights gives plausible numbers: still caught.
  TensorMap in = p.inputs;
  auto& w = in.at("w13");
  const std::size_t half = w.nbytes() / 8;
  std::swap_ranges(static_cast<char*>(w.raw()), static_cast<char*>(w.raw()) + half, static_cast<char*>(w.raw()) + half);
  Prepared q = p;
  q.inputs = in;
  const auto o = run_cpu(q, cfg(16, 32, 64), 2);
  EXPECT_FALSE(F().validate(p.problem, p.inputs, o.outputs, p.reference).ok);
}

// ---- large problems: the reference samples rows

TEST(GmmReference, LargeProblemsSampleRows) {
  Params pr = gmm_problem(192, 8, 4, 0, 1024, 1024, 16);
  const auto p = prepare(F(), pr, seeded(23));
  const Tensor& ref = p.reference.at("h");
  const std::int64_t R = ref.shape()[0];
  ASSERT_GT(static_cast<double>(R) * 1024 * 2048, gmm::kReferenceFullMacs);
  const auto pad = gmm::zero_rows(p.inputs.at("x_sorted"));
  std::int64_t computed = 0, skipped = 0;
  for (std::int64_t r = 0; r < R; ++r) {
    if (pad[r]) continue;
    (std::isnan(ref.get(r * 1024)) ? skipped : computed)++;
  }
  EXPECT_GE(computed, gmm::kReferenceMinRows);
  EXPECT_GT(skipped, 0);
  auto o = run_cpu(p, cfg(32, 128, 256), 2);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  // A NaN in a row the reference skipped is still caught; so is a wrong value in a sampled one.
  std::int64_t skipped_row = -1, sampled_row = -1;
  for (std::int64_t r = 0; r < R; ++r) {
    if (pad[r]) continue;
    (std::isnan(ref.get(r * 1024)) ? skipped_row : sampled_row) = r;
  }
  auto bad = o.outputs;
  bad.at("h").set(skipped_row * 1024 + 9, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(F().validate(p.problem, p.inputs, bad, p.reference).ok);
  bad = o.outputs;
  bad.at("h").set(sampled_row * 1024 + 9, bad.at("h").get(sampled_row * 1024 + 9) + 0.5);
  const auto v = F().validate(p.problem, p.inputs, bad, p.reference);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.summary().find("at [" + std::to_string(sampled_row) + ",9]"), std::string::npos) << v.summary();
}

// ---- the cuda backend's description (no GPU needed)

TEST(GmmCudaSpace, DefaultsAndSpacesAreValidForEveryPreset) {
  const BackendImpl& cu = F().need_backend(Backend::cuda);
  const auto dev = described_h100();
  for (const auto& name : kPresets)
    for (std::int64_t T : {1, 16, 128, 1024, 16384})
      for (const char* stage : {"up", "down"})
        for (const char* dt : {"bf16", "f16"}) {
          Params pr = gmm_preset(name);
          pr.set("tokens", T);
          pr.set("stage", std::string(stage));
          pr.set("dtype", std::string(dt));
          pr = complete(F().problem_params, pr, "gmm");
          const Params d = cu.default_config(pr, dev);
          EXPECT_EQ(cu.invalid_reason(pr, d, dev), "") << pr.str() << " " << d.str();
          const auto curated = cu.space(pr, dev, false), full = cu.space(pr, dev, true);
          EXPECT_FALSE(curated.empty()) << pr.str();
          EXPECT_LE(curated.size(), full.size());
          for (auto& c : full) {
            EXPECT_EQ(cu.invalid_reason(pr, c, dev), "") << pr.str() << " " << c.str();
            if (gmm::wgmma::selected(c)) continue;  // tests/kernels/gmm/wgmma_space_test.cpp
            if (!peer_of(cu, c).empty()) continue;  // the libraries': tests/kernels/gmm/cublas_peer_test.cpp
            const auto cc = gmm::cuda::parse_config(c);
            // The tile map (16 bytes per M-tile the most rows can make, and its status entry),
            // then split-K's partials.
            const GmmSpec gs = GmmSpec::parse(pr);
            const std::size_t map = static_cast<std::size_t>((gs.max_rows() + cc.shape.bm - 1) / cc.shape.bm + gs.e_local() + 1) * 16;
            EXPECT_EQ(cu.workspace_bytes(pr, c),
                      map + (cc.split > 1 ? static_cast<std::size_t>(cc.split) * gs.max_rows() * gs.n_w() * 4 : 0u));
          }
        }
}

TEST(GmmCudaKernel, FastDivisionMatchesDivision) {
  // The kernel decodes its tile index with a multiply-high and a shift: exact for every
  // divisor it meets (splits, N-tile counts, group sizes) over the whole non-negative int range.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> any(0, 2147483647);
  std::vector<int> divisors;
  for (int d = 1; d <= 300; ++d) divisors.push_back(d);
  for (int d : {511, 512, 513, 1000, 4096, 65535, 65536, 1 << 20, 1000003, 1 << 30, 2147483647}) divisors.push_back(d);
  for (int d : divisors) {
    const gmm::cuda::FastDiv f = gmm::cuda::fast_div_by(d);
    std::vector<int> ns = {0, 1, d - 1, d, d + 1, 2147483647, 2147483646, 2147483647 - d};
    for (int i = 0; i < 200; ++i) ns.push_back(any(rng));
    for (int n : ns)
      if (n >= 0) ASSERT_EQ(gmm::cuda::fast_div(n, f), n / d) << n << " / " << d;
  }
}

TEST(GmmCudaKernel, SplitKSlicesCoverKOnceInOrder) {
  // Decode's kernels take their split's K slices from the host's split of them: split s starts at
  // s * k_per + min(s, k_extra) and takes k_per (+1 below k_extra) slices. Every slice exactly
  // once, in split order, at least one each; the partial slice (the last) is the last split's,
  // which is named as holding only it when it does.
  for (int bk : {32, 64, 128})
    for (int k : {8, 40, 96, 128, 160, 232, 768, 808, 7168})
      for (int split : {1, 2, 3, 4, 6, 8}) {
        const int slices = (k + bk - 1) / bk;
        if (split > slices) continue;
        gmm::cuda::KernelArgs a;
        a.k_dim = k;
        a.split = split;
        a.n_out = 48;
        a.n_tiles = 3;
        gmm::cuda::set_k_slices(a, bk);
        const std::string what = "K=" + std::to_string(k) + " bk=" + std::to_string(bk) + " split=" + std::to_string(split);
        int next = 0;
        for (int s = 0; s < split; ++s) {
          const int first = s * a.k_per + std::min(s, a.k_extra), n = a.k_per + (s < a.k_extra ? 1 : 0);
          EXPECT_EQ(first, next) << what << " s=" << s;
          EXPECT_GE(n, 1) << what << " s=" << s;
          next = first + n;
          const bool partial = k % bk != 0 && first + n == slices;
          EXPECT_EQ(a.tail_split == s, partial) << what << " s=" << s;
          EXPECT_EQ(a.tail_only_split == s, partial && n == 1) << what << " s=" << s;
        }
        EXPECT_EQ(next, slices) << what;
        EXPECT_EQ(a.up_elems, 48u * static_cast<unsigned>(k)) << what;
        EXPECT_EQ(a.neg_split, -split) << what;
        EXPECT_EQ(a.neg_n_tiles, -3) << what;
      }
}

TEST(GmmCudaSpace, ConfigParamsNameTheMmaKernelAndRoundTrip) {
  // What a caller builds from a Config (tests, the space, the defaults) must say which kernel it
  // is: code that branches on `kernel` (the cuBLAS comparison, the layer) reads it unchecked.
  for (const gmm::cuda::Config c : {gmm::cuda::Config{{16, 64, 64, 1, 4, 4}, 4, 1}, gmm::cuda::Config{{128, 128, 64, 2, 2, 3}, 1, 8}}) {
    const Params p = gmm::cuda::config_params(c);
    ASSERT_TRUE(p.has("kernel")) << p.str();
    EXPECT_EQ(p.s("kernel"), "mma");
    EXPECT_FALSE(gmm::wgmma::selected(p));
    const gmm::cuda::Config back = gmm::cuda::parse_config(p);
    EXPECT_EQ(back.shape, c.shape);
    EXPECT_EQ(back.split, c.split);
    EXPECT_EQ(back.group_m, c.group_m);
  }
}

TEST(GmmCudaSpace, InvalidConfigsAreExplained) {
  const BackendImpl& cu = F().need_backend(Backend::cuda);
  const auto dev = described_h100();
  const Params pr = complete(F().problem_params, gmm_problem(16, 64, 6, 2, 2048, 1408, 16), "gmm");
  auto reason = [&](const Params& p, const gmm::cuda::Config& c) {
    return cu.invalid_reason(p, gmm::cuda::config_params(c), dev);
  };
  EXPECT_EQ(reason(pr, {{16, 64, 64, 1, 4, 4}, 4}), "");
  EXPECT_NE(reason(pr, {{16, 64, 48, 1, 4, 4}, 1}).find("built:"), std::string::npos);
  EXPECT_NE(reason(pr, {{16, 64, 64, 1, 4, 4}, 5}).find("split_k"), std::string::npos);
  // Decode's 16-row tiles walk M-tiles one at a time; taller tiles group them.
  EXPECT_NE(reason(pr, {{16, 64, 64, 1, 4, 4}, 1, 4}).find("group_m must be 1"), std::string::npos);
  EXPECT_EQ(reason(pr, {{32, 64, 64, 1, 4, 4}, 1, 4}), "");
  // f16 has fewer shapes built than bf16.
  Params f16 = pr;
  f16.set("dtype", std::string("f16"));
  EXPECT_NE(reason(f16, {{16, 128, 64, 1, 4, 4}, 1}).find("no f16 kernel"), std::string::npos);
  // More splits than K slices: D=2048 / 64 = 32 slices is fine; a tiny K is not.
  const Params small_k = complete(F().problem_params, gmm_problem(16, 8, 2, 0, 64, 64, 16), "gmm");
  EXPECT_NE(reason(small_k, {{16, 64, 64, 1, 4, 4}, 2}).find("K slices"), std::string::npos);
  // Shapes the 16-byte loads cannot handle: no config at all, with the way out.
  const Params odd = complete(F().problem_params, gmm_problem(16, 8, 2, 0, 100, 64, 16), "gmm");
  EXPECT_TRUE(cu.space(odd, dev, true).empty());
  EXPECT_NE(cu.invalid_reason(odd, cu.default_config(odd, dev), dev).find("--backend cpu"), std::string::npos);
  // A device with little shared memory: the big tiles drop out, the default still fits.
  DeviceInfo small = dev;
  small.smem_optin = 48 * 1024;
  const Params big = complete(F().problem_params, gmm_problem(4096, 64, 6, 2, 2048, 1408, 16), "gmm");
  EXPECT_EQ(reason(big, {{128, 128, 64, 2, 2, 3}, 1}), "");
  EXPECT_NE(cu.invalid_reason(big, gmm::cuda::config_params({{128, 128, 64, 2, 2, 3}, 1}), small).find("shared memory"),
            std::string::npos);
  const Params d = cu.default_config(big, small);
  EXPECT_EQ(cu.invalid_reason(big, d, small), "") << d.str();
  // Split-K partials that would be huge at prefill sizes are refused.
  EXPECT_NE(reason(big, {{16, 64, 64, 1, 4, 4}, 8}).find("MiB"), std::string::npos);
  // Activations the kernel's 32-bit offsets cannot reach: 2^19 rows of 8192 (one row short of
  // them is fine).
  const Params huge = complete(F().problem_params, gmm_problem(65536, 8, 8, 0, 8192, 1024, 1), "gmm");
  EXPECT_NE(reason(huge, {{128, 128, 64, 2, 2, 3}, 1}).find("32-bit offsets"), std::string::npos);
  const Params below = complete(F().problem_params, gmm_problem(65535, 8, 8, 0, 8192, 1024, 1), "gmm");
  EXPECT_EQ(reason(below, {{128, 128, 64, 2, 2, 3}, 1}), "");
}

TEST(GmmCudaSpace, EveryBuiltShapeIsSane) {
  std::size_t f16 = 0;
  for (auto& t : gmm::cuda::tiles()) {
    ASSERT_NE(t.up_bf16, nullptr);
    ASSERT_NE(t.down_bf16, nullptr);
    EXPECT_EQ(t.up_f16 == nullptr, t.down_f16 == nullptr);
    f16 += t.up_f16 ? 1 : 0;
    EXPECT_LE(gmm::cuda::smem_bytes(t.shape, 385), described_h100().smem_optin);
    for (auto& u : gmm::cuda::tiles()) EXPECT_TRUE(&t == &u || !(t.shape == u.shape));
  }
  EXPECT_GE(gmm::cuda::tiles().size(), 12u);
  EXPECT_GE(f16, 3u);
}

// ---- bad input, refused clearly

TEST(GmmProblem, RefusesWhatDoesNotFitInHostMemory) {
  try {
    prepare(F(), gmm_problem(64, 4096, 8, 0, 65536, 65536, 16), seeded(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard with --ep"), std::string::npos) << e.what();
  }
  // DeepSeek-V3 with its shared expert on a 16 GB host: up alone needs 15 GB of w13, refused
  // with a headroom margin, before anything is allocated.
  ::setenv("MOEBENCH_HOST_MEM_BYTES", "16e9", 1);
  Params pr = gmm_preset("deepseek-v3");
  pr.set("tokens", std::int64_t{64});
  try {
    F().check_problem(complete(F().problem_params, pr, "gmm"));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("experts=257 hidden=7168 intermediate=2048 needs 15."), std::string::npos) << m;
    EXPECT_NE(m.find("16.0 GB available"), std::string::npos) << m;
  }
  // Sharded 8 ways it fits.
  pr.set("expert_end", std::int64_t{33});
  EXPECT_NO_THROW(F().check_problem(complete(F().problem_params, pr, "gmm")));
  ::unsetenv("MOEBENCH_HOST_MEM_BYTES");
}

TEST(GmmProblem, BadParametersAndInputs) {
  auto bad = [](Params pr, TensorMap given, const std::string& want) {
    try {
      prepare(F(), pr, seeded(1), std::move(given));
      ADD_FAILURE() << "no error for " << pr.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  Params up_rw = gmm_problem(4, 8, 2, 0, 32, 16, 4);
  up_rw.set("routed_weight", std::int64_t{1});
  bad(up_rw, {}, "stage=down");
  bad(gmm_problem(4, 4, 8, 0, 32, 16, 4), {}, "topk=8 is larger than experts=4");
  Params range = gmm_problem(4, 8, 2, 1, 32, 16, 4);
  range.set("expert_begin", std::int64_t{5});
  range.set("expert_end", std::int64_t{12});
  bad(range, {}, "inside [0, 9)");
  TensorMap dec;
  dec["offsets"] = i32_tensor({0, 8, 4, 12});
  bad(gmm_problem(4, 3, 2, 0, 32, 16, 4), dec, "decrease at expert 1");
  TensorMap start;
  start["offsets"] = i32_tensor({2, 8, 8, 12});
  bad(gmm_problem(4, 3, 2, 0, 32, 16, 4), start, "offsets[0]");
  TensorMap mism;
  mism["offsets"] = i32_tensor({0, 4, 8, 12});
  mism["x_sorted"] = Tensor(DType::bf16, {10, 32});
  bad(gmm_problem(4, 3, 2, 0, 32, 16, 4), mism, "offsets end at 12");
  TensorMap noff;
  noff["x_sorted"] = Tensor(DType::bf16, {10, 32});
  bad(gmm_problem(4, 3, 2, 0, 32, 16, 4), noff, "without offsets");
}

}  // namespace
}  // namespace moe
