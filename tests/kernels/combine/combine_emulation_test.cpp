// The combine cuda kernel (kernels/combine/cuda_kernel.cuh) run on the cpu by the emu backend
// (kernels/combine/emu.cpp: the cuda backend's host half, the kernel under the simt emulator):
// every config of the full space, both layouts, every dtype and output dtype, with and without
// the rmsnorm epilogue, validated against the reference by the family's own
// check. The inputs carry NaN in every row a skipped slot points at, so a kernel that
// multiplies instead of selecting fails here too. tests/gpu/dispatch_combine_gpu_test.cpp
// checks the real thing.
#include "support/described_devices.hpp"
#include <gtest/gtest.h>

#include <string>

#include "combine/family.hpp"
#include "combine/spec.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using moe::testing::described_h100;

// One config through the emu backend (the cuda backend's host half, the kernel emulated);
// empty when it validates.
std::string check(const tuner::Prepared& p, const Params& config) {
  const tuner::Outcome o = tuner::run_emu(p, config);
  return o.validation.ok ? std::string() : p.problem.str() + " | " + config.str() + ": " + o.validation.summary() + "\n";
}

Params problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D, const std::string& dtype,
               const std::string& layout, const std::string& out_dtype, const std::string& epilogue) {
  return Params{{"tokens", T},
                {"experts", E},
                {"topk", k},
                {"shared", S},
                {"hidden", D},
                {"dtype", dtype},
                {"layout", layout},
                {"out_dtype", out_dtype},
                {"epilogue", epilogue},
                {"align", std::int64_t{4}}};
}

std::string check_space(const Params& pr, std::uint64_t seed) {
  const Params full = complete(combine_family().problem_params, pr, "test problem");
  InputOptions o;
  o.seed = seed;
  const tuner::Prepared p = tuner::prepare(combine_family(), full, o);
  std::string fails;
  const auto configs = combine_family().need_backend(Backend::emu).space(full, described_h100(), true);
  if (configs.empty()) return full.str() + ": empty space\n";
  for (const Params& c : configs) fails += check(p, c);
  return fails;
}

TEST(CombineEmulation, EveryConfigRaggedAndDense) {
  // D=40: every vector width divides the row for 16-bit types; f32 takes 16, 8 and 4 bytes.
  for (const char* dt : {"bf16", "f16", "f32"})
    for (const char* layout : {"ragged", "dense"})
      EXPECT_EQ(check_space(problem(11, 12, 4, 1, 40, dt, layout, "same", "none"), 3), "") << dt << " " << layout;
}

TEST(CombineEmulation, EveryConfigF32OutAndRmsnorm) {
  for (const char* dt : {"bf16", "f16"})
    for (const char* ep : {"none", "rmsnorm"})
      EXPECT_EQ(check_space(problem(9, 8, 3, 0, 48, dt, "ragged", "f32", ep), 4), "") << dt << " " << ep;
  EXPECT_EQ(check_space(problem(6, 8, 2, 1, 64, "f32", "dense", "same", "rmsnorm"), 5), "");
  EXPECT_EQ(check_space(problem(5, 16, 8, 0, 96, "bf16", "ragged", "same", "rmsnorm"), 6), "");
}

TEST(CombineEmulation, OddHiddenAndManySlots) {
  // D = 90 = 2*45, not a multiple of 128 (like gpt-oss's 2880): only 2- and 4-byte vectors.
  // K = 34 slots takes the ballot's second pass over a token's slots.
  EXPECT_EQ(check_space(problem(4, 32, 16, 2, 90, "bf16", "ragged", "same", "rmsnorm"), 7), "");
  EXPECT_EQ(check_space(problem(3, 40, 34, 0, 90, "f16", "dense", "f32", "none"), 8), "");
}

// The rmsnorm epilogue with an eps that matters (0.5 against mean squares of order 1) and a token
// whose sum and residual are all zero: its out must be exactly 0, which only the eps keeps from
// 0 * rsqrt(0) = NaN. A kernel dropping eps fails both.
TEST(CombineEmulation, RmsnormEpsMattersAndAZeroTokenGivesZero) {
  for (const char* dt : {"bf16", "f16"}) {
    Params pr = problem(7, 8, 3, 0, 64, dt, "ragged", "same", "rmsnorm");
    pr.set("eps", 0.5);
    const Params full = complete(combine_family().problem_params, pr, "test problem");
    InputOptions o;
    o.seed = 12;
    const tuner::Prepared first = tuner::prepare(combine_family(), full, o);
    TensorMap given = first.inputs;
    const std::int64_t K = 3, D = 64, zero_token = 4;
    for (std::int64_t j = 0; j < K; ++j) given.at("weights").data<float>()[zero_token * K + j] = 0.0f;
    for (std::int64_t c = 0; c < D; ++c) given.at("residual").set(zero_token * D + c, 0.0);
    const tuner::Prepared p = tuner::prepare(combine_family(), full, o, given);
    for (std::int64_t c = 0; c < D; ++c) ASSERT_EQ(p.reference.at("out").get(zero_token * D + c), 0.0) << dt;
    std::string fails;
    for (const Params& c : combine_family().need_backend(Backend::emu).space(full, described_h100(), true)) {
      const tuner::Outcome out = tuner::run_emu(p, c);
      if (!out.validation.ok) fails += c.str() + ": " + out.validation.summary() + "\n";
      for (std::int64_t i = 0; i < D; ++i)
        if (out.outputs.at("out").get(zero_token * D + i) != 0.0) {
          fails += c.str() + ": the all-zero token's out[" + std::to_string(i) + "] is " +
                   std::to_string(out.outputs.at("out").get(zero_token * D + i)) + "\n";
          break;
        }
    }
    EXPECT_EQ(fails, "") << dt;
  }
}

}  // namespace
