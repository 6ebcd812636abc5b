// gmm in fp8 (DESIGN.md 1.6): the reference against a naive dequantize-then-fp64 product
// written here, the cpu backend's every fp8 config against the reference (fp32 and ue8m0
// scales, experts without rows, padding rows, amax-0 and large groups), validation catching
// codes and scales that are off, and the refusals (shapes, configs, the cuda backend's bf16 tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "common/e4m3.hpp"
#include "gmm/detail.hpp"
#include "gmm/family.hpp"
#include "moe/error.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::fp8_gmm_problem;
using testing::seeded;
using tuner::prepare;
using tuner::Prepared;
using tuner::run_cpu;

const FamilyDesc& F() { return gmm_family(); }


Params cfg(std::int64_t bm) { return Params{{"block_m", bm}, {"block_n", std::int64_t{128}}, {"block_k", std::int64_t{128}}}; }

double deq_act(const TensorMap& in, const char* q, const char* sc, std::int64_t r, std::int64_t k, std::int64_t K) {
  return static_cast<double>(fp8::to_float(in.at(q).data<std::uint8_t>()[r * K + k])) *
         in.at(sc).data<float>()[r * (K / 128) + k / 128];
}

// The product of the dequantized operands, element by element, in fp64: no blocks, no sharing.
double naive(const TensorMap& in, const GmmSpec& s, std::int64_t e, std::int64_t r, std::int64_t n) {
  const std::int64_t K = s.k_dim(), NW = s.n_w();
  const auto* wq = in.at(s.weight_name()).data<std::uint8_t>();
  const auto* ws = in.at(s.weight_scale_name()).data<float>();
  double acc = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    const double w = static_cast<double>(fp8::to_float(wq[(e * NW + n) * K + k])) * ws[(e * (NW / 128) + n / 128) * (K / 128) + k / 128];
    acc += deq_act(in, s.act_name(), s.act_scale_name(), r, k, K) * w;
  }
  return acc;
}

TEST(GmmFp8Reference, MatchesTheNaiveDequantizedProduct) {
  for (const char* stage : {"up", "down"}) {
    const Params problem = fp8_gmm_problem(9, 2, 1, 256, 256, 4, stage);
    const Prepared p = prepare(F(), problem, seeded(3));
    const GmmSpec s = GmmSpec::parse(p.problem);
    const auto* off = p.inputs.at("offsets").data<std::int32_t>();
    const auto pad = gmm::zero_rows(p.inputs.at(s.act_name()));
    int rows = 0;
    for (std::int64_t e = 0; e < s.e_local(); ++e)
      for (std::int64_t r = off[e]; r < off[e + 1]; ++r) {
        if (pad[r]) continue;
        ++rows;
        if (s.down) {
          const double rw = p.inputs.at("row_weight").data<float>()[r];
          for (std::int64_t n = 0; n < s.hidden; ++n)
            EXPECT_EQ(p.reference.at("y_sorted").get(r * s.hidden + n), round_to(DType::bf16, static_cast<float>(naive(p.inputs, s, e, r, n) * rw)))
                << "row " << r << " col " << n;
          continue;
        }
        // h, requantized per 128 group from fp32 values of silu(gate) * up.
        std::vector<float> h(static_cast<std::size_t>(s.intermediate));
        for (std::int64_t n = 0; n < s.intermediate; ++n) {
          const double g = naive(p.inputs, s, e, r, n), u = naive(p.inputs, s, e, r, s.intermediate + n);
          h[n] = static_cast<float>(g / (1 + std::exp(-g)) * u);
        }
        std::vector<std::uint8_t> q(h.size());
        std::vector<float> sc(h.size() / 128);
        fp8::quantize_row(h.data(), s.intermediate, q.data(), sc.data(), false);
        for (std::size_t g = 0; g < sc.size(); ++g)
          EXPECT_EQ(p.reference.at("h_scale").data<float>()[r * 2 + static_cast<std::int64_t>(g)], sc[g]) << "row " << r;
        for (std::int64_t n = 0; n < s.intermediate; ++n)
          EXPECT_EQ(p.reference.at("h").data<std::uint8_t>()[r * s.intermediate + n], q[n]) << "row " << r << " col " << n;
      }
    EXPECT_GT(rows, 4) << stage;
  }
}

TEST(GmmFp8Cpu, EveryConfigMatchesTheReference) {
  // 12 tokens over 8 experts: some experts get no rows, align 16 pads the others.
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"}) {
      const Params problem = fp8_gmm_problem(12, 8, 2, 384, 256, 16, stage, fmt);
      const Prepared p = prepare(F(), problem, seeded(7));
      const auto space = F().need_backend(Backend::cpu).space(p.problem, DeviceInfo{}, true);
      ASSERT_EQ(space.size(), 4u);
      for (const Params& c : space) {
        const auto o = run_cpu(p, c, 2);
        EXPECT_TRUE(o.validation.ok) << stage << " " << fmt << " " << c.str() << ": " << o.validation.summary();
      }
      if (std::string(fmt) == "ue8m0" && std::string(stage) == "down") {
        // The activations' scales are powers of two.
        const Tensor& hs = p.inputs.at("h_scale");
        for (std::int64_t i = 0; i < hs.numel(); ++i) {
          int ex = 0;
          EXPECT_EQ(std::frexp(hs.data<float>()[i], &ex), 0.5f) << i;
        }
      }
    }
}

TEST(GmmFp8Cpu, InputsHoldTheEdgeGroups) {
  const Prepared p = prepare(F(), fp8_gmm_problem(64, 4, 2, 512, 128, 8, "up"), seeded(5));
  const Tensor& xs = p.inputs.at("x_scale");
  const auto pad = gmm::zero_rows(p.inputs.at("x_sorted"));
  int zero_groups = 0, big = 0;
  for (std::int64_t i = 0; i < xs.numel(); ++i) {
    if (pad[i / 4]) continue;
    zero_groups += xs.data<float>()[i] == fp8::group_scale(0, false);
    big += xs.data<float>()[i] > 1.0f;  // amax beyond 448
  }
  EXPECT_GT(zero_groups, 0);
  EXPECT_GT(big, 0);
}

// Validation: a code one step off passes (a reciprocal instead of a division does that), two
// steps off fail on a large element but pass on a small one while its value stays within
// kHRangeAtol of the group's range (the fp8 wgmma's accumulation error); a scale beyond
// kHScaleRtol fails, as do NaN and unwritten elements.
TEST(GmmFp8Validate, CodesWithinOneStepAndScalesWithinOneUlp) {
  const Prepared p = prepare(F(), fp8_gmm_problem(16, 2, 1, 128, 256, 8, "up"), seeded(9));
  const GmmSpec s = GmmSpec::parse(p.problem);
  auto with = [&](auto change) {
    TensorMap got = p.reference;
    change(got);
    return gmm::validate(s, p.inputs, got, p.reference);
  };
  // A real row with a code that can move both ways.
  const auto pad = gmm::zero_rows(p.inputs.at("x_sorted"));
  // `at` is large (|q| >= 4: two steps are 0.5, beyond 448 * kHRangeAtol = 0.22), `small` is
  // below 1/2 (three steps are at most 0.094).
  std::int64_t at = -1, small = -1;
  for (std::int64_t i = 0; i < p.reference.at("h").numel(); ++i) {
    const std::uint8_t q = p.reference.at("h").data<std::uint8_t>()[i];
    if (pad[i / 256]) continue;
    if (at < 0 && (q & 0x7F) >= 0x48 && (q & 0x7F) < 0x70) at = i;
    if (small < 0 && (q & 0x7F) > 0 && (q & 0x7F) < 0x30) small = i;
  }
  ASSERT_GE(at, 0);
  ASSERT_GE(small, 0);
  EXPECT_TRUE(with([](TensorMap&) {}).ok);
  EXPECT_TRUE(with([&](TensorMap& g) { g.at("h").data<std::uint8_t>()[at] += 1; }).ok);
  EXPECT_FALSE(with([&](TensorMap& g) { g.at("h").data<std::uint8_t>()[at] += 2; }).ok);
  EXPECT_TRUE(with([&](TensorMap& g) { g.at("h").data<std::uint8_t>()[small] += 3; }).ok);
  EXPECT_FALSE(with([&](TensorMap& g) {
                 auto& q = g.at("h").data<std::uint8_t>()[small];
                 q = static_cast<std::uint8_t>((q & 0x80) | 0x38);  // the same sign, magnitude 1.0
               }).ok);
  EXPECT_FALSE(with([&](TensorMap& g) { g.at("h").data<std::uint8_t>()[at] = 0x7F; }).ok);
  EXPECT_FALSE(with([&](TensorMap& g) { g.at("h").data<std::uint8_t>()[at] = 0xFF; }).ok);  // poison
  const std::int64_t srow = at / 256 * 2;
  // h_scale: within gmm::kHScaleRtol relative (an fp32 amax against an fp64 one), not beyond.
  EXPECT_TRUE(with([&](TensorMap& g) {
                auto& v = g.at("h_scale").data<float>()[srow];
                v = std::nextafter(v, 1e30f);
              }).ok);
  EXPECT_TRUE(with([&](TensorMap& g) {
                auto& v = g.at("h_scale").data<float>()[srow];
                v = static_cast<float>(v * (1 + 0.5 * gmm::kHScaleRtol));
              }).ok);
  EXPECT_FALSE(with([&](TensorMap& g) {
                 auto& v = g.at("h_scale").data<float>()[srow];
                 v = static_cast<float>(v * (1 + 2 * gmm::kHScaleRtol));
               }).ok);
}

TEST(GmmFp8Problem, RefusesShapesAndConfigs) {
  auto error_of = [](const Params& p) -> std::string {
    try {
      F().check_problem(complete(F().problem_params, p, "gmm"));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string hidden = error_of(fp8_gmm_problem(4, 4, 2, 200, 128, 8, "up"));
  EXPECT_NE(hidden.find("hidden to be a multiple of 128"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("got 200"), std::string::npos) << hidden;
  const std::string inter = error_of(fp8_gmm_problem(4, 4, 2, 256, 96, 8, "up"));
  EXPECT_NE(inter.find("intermediate (per TP shard) to be a multiple of 128"), std::string::npos) << inter;
  EXPECT_NE(inter.find("got 96"), std::string::npos) << inter;
  const Params ok = complete(F().problem_params, fp8_gmm_problem(4, 4, 2, 256, 128, 8, "up"), "gmm");
  EXPECT_EQ(F().need_backend(Backend::cpu).invalid_reason(ok, cfg(8), DeviceInfo{}), "");
  EXPECT_NE(F().need_backend(Backend::cpu).invalid_reason(ok, Params{{"block_m", std::int64_t{8}}, {"block_n", std::int64_t{64}}, {"block_k", std::int64_t{128}}}, DeviceInfo{}).find("fp8 takes block_n=128"),
            std::string::npos);
  const BackendImpl& cuda = F().need_backend(Backend::cuda);
  // kernel=mma runs fp8 with its own tiles (block_k one 128-wide scale block), kernel=wgmma with
  // CUTLASS's blockwise-scaled grouped GEMM (tests/kernels/gmm/wgmma_fp8_test.cpp); the bf16 tiles say so.
  EXPECT_EQ(cuda.invalid_reason(ok, cuda.default_config(ok, DeviceInfo{}), DeviceInfo{}), "");
  std::optional<Params> mma;
  bool wgmma = false;
  for (const Params& c : cuda.space(ok, DeviceInfo{}, true)) {
    if (!peer_of(cuda, c).empty()) continue;  // cuBLASLt's: tests/kernels/gmm/cublas_peer_test.cpp
    if (c.s("kernel") == "wgmma") {
      wgmma = true;
      continue;
    }
    EXPECT_EQ(c.i("block_k"), 128) << c.str();
    if (!mma) mma = c;
  }
  ASSERT_TRUE(mma.has_value());
  EXPECT_TRUE(wgmma);
  Params bf16_tile = *mma;
  bf16_tile.set("block_k", std::int64_t{64});
  EXPECT_NE(cuda.invalid_reason(ok, bf16_tile, DeviceInfo{}).find("block_k=128, one scale block"), std::string::npos);
  // Up splits K only where a second pass sums the splits (block_n=128), not where the epilogue
  // requantizes h (block_n=256).
  Params split_up = *mma;
  split_up.set("split_k", std::int64_t{2});
  split_up.set("block_n", std::int64_t{128});
  split_up.set("warps_n", std::int64_t{4});
  split_up.set("stages", std::int64_t{4});
  EXPECT_EQ(cuda.invalid_reason(ok, split_up, DeviceInfo{}), "") << split_up.str();
  Params split_fused = split_up;
  split_fused.set("block_n", std::int64_t{256});
  split_fused.set("warps_n", std::int64_t{8});
  split_fused.set("stages", std::int64_t{3});
  EXPECT_NE(cuda.invalid_reason(ok, split_fused, DeviceInfo{}).find("split_k must be 1 (block_n=128 splits K"),
            std::string::npos) << split_fused.str();
  // An expert past the kernel's 32-bit offsets (2I x D = 2^32 bytes of e4m3) is refused with the way out.
  const Params vast = complete(F().problem_params, fp8_gmm_problem(4, 4, 2, 65536, 32768, 8, "up"), "gmm");
  EXPECT_NE(cuda.invalid_reason(vast, split_up, DeviceInfo{}).find("32-bit offsets: use kernel=wgmma"), std::string::npos);
  // vLLM's spelling is the same problem.
  const ParamSpec* dt = F().problem_param("dtype");
  EXPECT_EQ(parse_value(*dt, "fp8_w8a8"), Value(std::string("fp8")));
}

// Weights break the rule of docs/fp8.md ("Invalid weights") one entry at a time: a NaN code of
// either sign, a block scale that is zero, negative, NaN or inf. Each is refused before any
// backend runs, naming the tensor and the entry; the untouched weights prepare.
TEST(GmmFp8Inputs, RefusesNanWeightCodesAndScalesThatAreNotPositiveAndFinite) {
  for (const char* stage : {"up", "down"}) {
    const Params problem = fp8_gmm_problem(9, 2, 1, 256, 256, 4, stage);
    const Prepared good = prepare(F(), problem, seeded(8));
    const GmmSpec s = GmmSpec::parse(good.problem);
    const auto refused = [&](const char* name, std::int64_t at, auto set, const std::string& says) {
      TensorMap given;
      for (const char* k : {s.weight_name(), s.weight_scale_name()}) {
        given[k] = Tensor(good.inputs.at(k).dtype(), good.inputs.at(k).shape());
        std::memcpy(given[k].raw(), good.inputs.at(k).raw(), good.inputs.at(k).nbytes());
      }
      set(given.at(name), at);
      try {
        prepare(F(), problem, seeded(8), given);
        ADD_FAILURE() << stage << " " << name << "[" << at << "] accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("flat index " + std::to_string(at)), std::string::npos) << e.what();
      }
    };
    const std::int64_t last_code = good.inputs.at(s.weight_name()).numel() - 1;
    for (std::uint8_t nan : {std::uint8_t{0x7F}, std::uint8_t{0xFF}})
      refused(s.weight_name(), last_code, [nan](Tensor& t, std::int64_t i) { t.data<std::uint8_t>()[i] = nan; },
              "holds a NaN code");
    for (float bad : {0.0f, -0.5f, std::nanf(""), INFINITY})
      refused(s.weight_scale_name(), 1, [bad](Tensor& t, std::int64_t i) { t.data<float>()[i] = bad; },
              "weight block scales must be positive and finite");
  }
}

}  // namespace
}  // namespace moe
