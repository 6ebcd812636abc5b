// gmm's expert function as problem parameters (gpt-oss): the clamped SwiGLU pinned by hand at,
// below and past both clamps; the reference and the cpu backend on random data for every
// layout, activation and bias; which kernels offer it (the mma kernel) and which refuse it,
// saying why; table keys that keep the plain problems' keys and separate the others.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gmm/detail.hpp"
#include "gmm/family.hpp"
#include "moe/error.hpp"
#include "peers/triton_space.hpp"
#include "runtime/table.hpp"
#include "support/described_devices.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::described_h100;
using testing::gmm_problem;
using testing::i32_tensor;
using testing::seeded;
using tuner::prepare;
using tuner::run_cpu;

const FamilyDesc& F() { return gmm_family(); }

Params cfg(std::int64_t bm, std::int64_t bn, std::int64_t bk) {
  return Params{{"block_m", bm}, {"block_n", bn}, {"block_k", bk}};
}

using testing::bf16_tensor;
double bf16(double v) { return testing::bf16_rounded(v); }

Params swiglu(Params p, double alpha = 1.702, double limit = 7.0) {
  return p.set("activation", std::string("swiglu_oai")).set("alpha", alpha).set("limit", limit);
}

// ---- the activation by hand

struct Case {
  double gate, up, h;  // h by hand: (clamp(up) + 1) * min(gate, limit) * sigmoid(alpha * min(gate, limit))
};

// One token, hidden 1, x = 1: gate and up are w13's values, so each column of h is one case.
void expect_cases(const std::vector<Case>& cases, double alpha, double limit) {
  const auto I = static_cast<std::int64_t>(cases.size());
  std::vector<double> w(2 * cases.size());
  for (std::size_t j = 0; j < cases.size(); ++j) w[j] = cases[j].gate, w[cases.size() + j] = cases[j].up;
  TensorMap given;
  given["offsets"] = i32_tensor({0, 1});
  given["x_sorted"] = bf16_tensor({1, 1}, {1});
  given["w13"] = bf16_tensor({1, 2 * I, 1}, w);
  const auto p = prepare(F(), swiglu(gmm_problem(1, 1, 1, 0, 1, I, 1), alpha, limit), seeded(1), given);
  const auto o = run_cpu(p, cfg(8, 16, 64), 1);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  for (std::int64_t j = 0; j < I; ++j) {
    const Case& c = cases[static_cast<std::size_t>(j)];
    EXPECT_EQ(p.reference.at("h").get(j), bf16(c.h)) << "reference: gate " << c.gate << " up " << c.up;
    EXPECT_EQ(o.outputs.at("h").get(j), bf16(c.h)) << "cpu: gate " << c.gate << " up " << c.up;
  }
}

TEST(GmmExpertFn, SwigluOaiByHandAtBelowAndPastTheClamps) {
  // gpt-oss's alpha 1.702 and limit 7. At a clamp and past it give the same value; below, none
  // is applied; the gate has no lower clamp.
  expect_cases({{1, 2, 2.5373872977984635},        // below both
                {7, 7, 55.99962502642654},         // at both
                {10, 9, 55.99962502642654},        // past both: clamped to 7, 7
                {10, -9, -41.99971876981991},      // gate past, up past below: 7, -7
                {7, -7, -41.99971876981991},       // at both, up at its lower clamp
                {0.5, -8, -2.102330619638281},     // up past its lower clamp only
                {-3, 0, -0.01807130970778597},     // a negative gate stays as it is
                {-10, 7, -3.2463690358842494e-06}},
               1.702, 7.0);
  // A limit and alpha of the problem's own: up past 2 is 2, the gate below it is not clamped.
  expect_cases({{1.5, 2.5, 3.679085142871396}, {2, 2, 3 * 2 / (1 + 0.1353352832366127)}}, 1.0, 2.0);
}

TEST(GmmExpertFn, InterleavedRowsAndBiasesByHand) {
  // x = [1, 2]; w13 interleaved by single rows: gate 0, up 0, gate 1, up 1.
  // Column 0: gate [0.5, 0.25] -> 1, + 0.5 = 1.5; up [1, -1] -> -1, + 2 = 1; silu(1.5) * 1.
  // Column 1: gate [1, 1] -> 3, - 1 = 2; up [0, 1] -> 2, + 0.25 = 2.25; silu(2) * 2.25.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 1});
  given["x_sorted"] = bf16_tensor({1, 2}, {1, 2});
  given["w13"] = bf16_tensor({1, 4, 2}, {0.5, 0.25, 1, -1, 1, 1, 0, 1});
  given["bias13"] = bf16_tensor({1, 4}, {0.5, 2, -1, 0.25});
  Params pr = gmm_problem(1, 1, 1, 0, 2, 2, 1);
  pr.set("w13_layout", std::string("interleaved")).set("bias13", std::int64_t{1});
  const auto p = prepare(F(), pr, seeded(1), given);
  EXPECT_EQ(p.reference.at("h").get(0), bf16(1.2263617142904655));
  EXPECT_EQ(p.reference.at("h").get(1), bf16(3.9635868509004704));
  const auto o = run_cpu(p, cfg(8, 16, 64), 1);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  EXPECT_EQ(o.outputs.at("h").get(0), bf16(1.2263617142904655));

  // Down: h [2, -1] . w2 [0.5, 1.5] = -0.5, + bias2 0.75 = 0.25, then the routed weight 0.5.
  TensorMap dg;
  dg["offsets"] = i32_tensor({0, 1});
  dg["h"] = bf16_tensor({1, 2}, {2, -1});
  dg["w2"] = bf16_tensor({1, 1, 2}, {0.5, 1.5});
  dg["bias2"] = bf16_tensor({1, 1}, {0.75});
  Tensor rw(DType::f32, {1});
  rw.set(0, 0.5);
  dg["row_weight"] = rw;
  Params pd = gmm_problem(1, 1, 1, 0, 1, 2, 1, "down");
  pd.set("routed_weight", std::int64_t{1}).set("bias2", std::int64_t{1});
  const auto q = prepare(F(), pd, seeded(1), dg);
  EXPECT_EQ(q.reference.at("y_sorted").get(0), 0.125);
  const auto od = run_cpu(q, cfg(8, 16, 64), 1);
  EXPECT_TRUE(od.validation.ok) << od.validation.summary();
  EXPECT_EQ(od.outputs.at("y_sorted").get(0), 0.125);
}

// ---- reference vs the cpu backend on random data

TEST(GmmExpertFn, CpuMatchesTheReferenceForEveryLayoutActivationAndBias) {
  // Hidden 96 and 2880 (gpt-oss's): multiples of 32, not of 128. Padding rows (align 8) stay
  // zero with biases. A limit of 1 puts many gate and up sums past the clamps.
  int checked = 0;
  for (std::int64_t D : {96, 2880})
    for (const char* layout : {"split", "interleaved"})
      for (std::int64_t block : {1, 8})
        for (const char* act : {"silu", "swiglu_oai"})
          for (double limit : {7.0, 1.0})
            for (std::int64_t bias : {0, 1}) {
              if ((std::string(layout) == "split" && block > 1) || (std::string(act) == "silu" && limit != 7.0)) continue;
              if (D == 2880 && block > 1) continue;
              Params pr = gmm_problem(D == 96 ? 19 : 5, 6, 2, 0, D, 48, 8);
              pr.set("activation", std::string(act)).set("limit", limit).set("w13_layout", std::string(layout));
              pr.set("w13_block", block).set("bias13", bias);
              const auto p = prepare(F(), pr, seeded(static_cast<std::uint64_t>(7 + checked)));
              EXPECT_EQ(p.inputs.count("bias13"), static_cast<std::size_t>(bias));
              if (bias) {  // random O(1) biases, never zeros
                const Tensor& b = p.inputs.at("bias13");
                double sq = 0;
                for (std::int64_t i = 0; i < b.numel(); ++i) sq += b.get(i) * b.get(i);
                const double rms = std::sqrt(sq / static_cast<double>(b.numel()));
                EXPECT_GT(rms, 0.3);
                EXPECT_LT(rms, 0.8);
              }
              for (const Params& c : {cfg(8, 16, 64), cfg(32, 32, 512)}) {
                const auto o = run_cpu(p, c, 2);
                EXPECT_TRUE(o.validation.ok) << pr.str() << " " << c.str() << ": " << o.validation.summary();
              }
              ++checked;
            }
  EXPECT_EQ(checked, 30);
  for (std::int64_t D : {96, 2880})
    for (std::int64_t bias : {0, 1})
      for (std::int64_t routed : {0, 1}) {
        Params pr = gmm_problem(13, 6, 2, 0, D, 64, 8, "down");
        pr.set("bias2", bias).set("routed_weight", routed);
        const auto p = prepare(F(), pr, seeded(static_cast<std::uint64_t>(50 + bias + 2 * routed)));
        const auto o = run_cpu(p, cfg(16, 32, 256), 2);
        EXPECT_TRUE(o.validation.ok) << pr.str() << ": " << o.validation.summary();
      }
}

TEST(GmmExpertFn, TheValidatorCatchesAnOutputWithoutTheBiasOrClamp) {
  // The same inputs computed as plain silu*up without bias13 must fail against the reference.
  Params pr = swiglu(gmm_problem(11, 4, 2, 0, 96, 32, 8), 1.702, 1.0);
  pr.set("w13_layout", std::string("interleaved")).set("bias13", std::int64_t{1});
  const auto p = prepare(F(), pr, seeded(3));
  Params plain = gmm_problem(11, 4, 2, 0, 96, 32, 8);
  plain.set("w13_layout", std::string("interleaved"));
  tuner::Prepared q = prepare(F(), plain, seeded(3), {{"offsets", Tensor::borrow(p.inputs.at("offsets"))},
                                                       {"x_sorted", Tensor::borrow(p.inputs.at("x_sorted"))},
                                                       {"w13", Tensor::borrow(p.inputs.at("w13"))}});
  const auto wrong = run_cpu(q, cfg(8, 16, 64), 1);
  ASSERT_TRUE(wrong.validation.ok) << wrong.validation.summary();
  EXPECT_FALSE(F().validate(p.problem, p.inputs, wrong.outputs, p.reference).ok);
}

// ---- which kernels compute it

TEST(GmmExpertFn, OnlyTheMmaKernelOffersItAndThePeersRefuseSayingWhy) {
  // The cuda and emu spaces hold the mma kernel alone (its epilogue computes every expert
  // function: gmm_expert_fn_emulation_test.cpp); the wgmma path, cuBLAS and the engines' Triton
  // kernel compute silu*up on split w13 alone and refuse, saying why.
  const DeviceInfo h100 = described_h100();
  const Params up = swiglu(gmm_problem(16, 8, 2, 0, 256, 128, 16));
  const Params down = Params(gmm_problem(16, 8, 2, 0, 256, 128, 16, "down")).set("bias2", std::int64_t{1});
  for (Backend b : {Backend::cuda, Backend::emu}) {
    const BackendImpl* impl = F().backend(b);
    if (!impl) continue;
    for (const Params& pr : {up, down}) {
      const Params full = complete(F().problem_params, pr, "gmm");
      const auto space = impl->space(full, h100, true);
      EXPECT_FALSE(space.empty()) << backend_name(b) << " " << pr.str();
      for (const Params& c : space) EXPECT_EQ(c.s("kernel"), "mma") << c.str();
      const Params def = complete(impl->config_params, impl->default_config(full, h100), "config");
      EXPECT_EQ(impl->invalid_reason(full, def, h100), "") << pr.str();
      // The emu backend refuses cuBLAS before the problem (it cannot run a library's kernels).
      for (const char* kernel : {"wgmma", "cublas"}) {
        if (b == Backend::emu && std::string(kernel) == "cublas") continue;
        const Params c = complete(impl->config_params, Params{{"kernel", std::string(kernel)}}, "config");
        const std::string why = impl->invalid_reason(full, c, h100);
        EXPECT_NE(why.find("kernel=" + std::string(kernel) + " computes silu(gate)*up"), std::string::npos) << why;
        EXPECT_NE(why.find(pr.s("stage") == "up" ? "activation=swiglu_oai" : "bias2=1"), std::string::npos) << why;
        EXPECT_NE(why.find("--backend cpu"), std::string::npos) << why;
      }
    }
    // The plain problem keeps every kind; a down stage ignores up's parameters.
    const Params plain = complete(F().problem_params, gmm_problem(16, 8, 2, 0, 256, 128, 16), "gmm");
    bool wgmma = false;
    for (const Params& c : impl->space(plain, h100, true)) wgmma |= c.s("kernel") == "wgmma";
    EXPECT_TRUE(wgmma);
    const Params down_of_swiglu =
        complete(F().problem_params, swiglu(gmm_problem(16, 8, 2, 0, 256, 128, 16, "down")), "gmm");
    wgmma = false;
    for (const Params& c : impl->space(down_of_swiglu, h100, true)) wgmma |= c.s("kernel") == "wgmma";
    EXPECT_TRUE(wgmma);
  }
  // The engines' Triton kernel, as moebench drives it, is silu*up.
  const Params full = complete(F().problem_params, swiglu(gmm_problem(16, 8, 2, 0, 256, 128, 16)), "gmm");
  const Params triton{{"BLOCK_SIZE_M", std::int64_t{16}}, {"BLOCK_SIZE_N", std::int64_t{64}},
                      {"BLOCK_SIZE_K", std::int64_t{64}}, {"GROUP_SIZE_M", std::int64_t{1}},
                      {"num_warps", std::int64_t{4}},     {"num_stages", std::int64_t{3}}};
  EXPECT_NE(peers::triton_invalid_reason(full, triton, h100).find("activation=swiglu_oai"), std::string::npos);
}

TEST(GmmExpertFn, TheLayerOnTheEmulatedKernelsTakesGptOssExpertFunction) {
  const FamilyDesc& L = family("moe-layer");
  const BackendImpl* emu = L.backend(Backend::emu);
  if (!emu) GTEST_SKIP() << "no emu backend in this build";
  Params oai{{"tokens", std::int64_t{4}},   {"experts", std::int64_t{8}}, {"topk", std::int64_t{2}},
             {"hidden", std::int64_t{256}}, {"intermediate", std::int64_t{128}}};
  const Params plain = complete(L.problem_params, oai, "layer");
  const Params cfg = complete(emu->config_params, emu->default_config(plain, described_h100()), "config");
  EXPECT_EQ(emu->invalid_reason(plain, cfg, described_h100()), "");
  oai.set("bias2", std::int64_t{1}).set("bias13", std::int64_t{1}).set("activation", std::string("swiglu_oai"));
  oai.set("w13_layout", std::string("interleaved"));
  EXPECT_EQ(emu->invalid_reason(complete(L.problem_params, oai, "layer"), cfg, described_h100()), "");
  // A block the kernel cannot map (3 of I = 96) is invalid, naming the stage.
  oai.set("intermediate", std::int64_t{96}).set("w13_block", std::int64_t{3});
  const std::string why = emu->invalid_reason(complete(L.problem_params, oai, "layer"), cfg, described_h100());
  EXPECT_NE(why.find("stage gmm_up"), std::string::npos) << why;
  EXPECT_NE(why.find("power of two"), std::string::npos) << why;
}

TEST(GmmExpertFn, ProblemsItCannotBeAreRefusedInOneLine) {
  Params odd = gmm_problem(4, 4, 2, 0, 64, 48, 16);
  odd.set("w13_layout", std::string("interleaved")).set("w13_block", std::int64_t{32});
  const Params full = complete(F().problem_params, odd, "gmm");
  try {
    F().check_problem(full);
    FAIL() << "w13_block 32 does not divide 48";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w13_block=32 does not divide intermediate=48"), std::string::npos) << e.what();
  }
  Params fp8 = swiglu(gmm_problem(4, 4, 2, 0, 128, 128, 16, "up", "fp8"));
  try {
    F().check_problem(complete(F().problem_params, fp8, "gmm"));
    FAIL() << "fp8 computes silu only";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype=fp8 computes silu(gate)*up"), std::string::npos) << e.what();
  }
}

// ---- table keys

TEST(GmmExpertFn, TableKeysOfPlainProblemsAreUnchangedAndTheOthersApart) {
  const Params plain = complete(F().problem_params, gmm_problem(16, 8, 2, 0, 256, 128, 16), "gmm");
  EXPECT_EQ(runtime::problem_key(plain),
            "align=16,dtype=bf16,expert_begin=0,expert_end=-1,experts=8,hidden=256,intermediate=128,routed_weight=0,"
            "shared=0,stage=up,topk=2");
  Params oai = swiglu(gmm_problem(16, 8, 2, 0, 256, 128, 16));
  oai.set("w13_layout", std::string("interleaved")).set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
  const std::string key = runtime::problem_key(complete(F().problem_params, oai, "gmm"));
  for (const char* part : {"activation=swiglu_oai", "alpha=1.702", "limit=7", "w13_layout=interleaved", "w13_block=1",
                           "bias13=1"})
    EXPECT_NE(key.find(part), std::string::npos) << part << " in " << key;
  EXPECT_EQ(key.find("bias2"), std::string::npos) << "up has no bias2: " << key;
  // A different limit is a different table.
  EXPECT_NE(runtime::problem_key(complete(F().problem_params, swiglu(oai, 1.702, 6.0), "gmm")), key);
  // Down keeps only its own: bias2, not the activation or the layout.
  Params down = oai;
  down.set("stage", std::string("down"));
  const std::string dkey = runtime::problem_key(complete(F().problem_params, down, "gmm"));
  EXPECT_NE(dkey.find("bias2=1"), std::string::npos) << dkey;
  for (const char* gone : {"activation", "alpha", "limit", "w13_layout", "w13_block", "bias13"})
    EXPECT_EQ(dkey.find(gone), std::string::npos) << gone << " in " << dkey;
}

}  // namespace
}  // namespace moe
