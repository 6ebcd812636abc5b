// The engines' Triton fused_moe search space as moebench declares it for the tuner: the space of
// vLLM's benchmark_moe.py (which SGLang's tuning script shares), the engines' default, and the
// configs the tuner must refuse before any worker runs them.
#include <gtest/gtest.h>

#include <set>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "peers/engine.hpp"
#include "peers/triton_space.hpp"

namespace {

using namespace moe;

Params problem(std::int64_t tokens, const std::string& dtype = "bf16") {
  const FamilyDesc& f = peers::engine_family(peers::Engine::vllm, "gmm");
  Params p{{"tokens", tokens}, {"experts", std::int64_t{128}}, {"topk", std::int64_t{8}}, {"hidden", std::int64_t{2048}},
           {"intermediate", std::int64_t{768}}, {"dtype", dtype}};
  return complete(f.problem_params, p, "test");
}

DeviceInfo h200() {
  DeviceInfo d;
  d.backend = Backend::cuda;
  d.name = "NVIDIA H200";
  d.smem_optin = 227 * 1024;
  return d;
}

TEST(TritonSpace, IsTheEnginesSpaceOnTheHost) {
  const auto space = peers::triton_space(problem(64), cpu_device_info(1));
  EXPECT_EQ(space.size(), 5u * 4 * 3 * 4 * 2 * 4);
  std::set<std::int64_t> m, k;
  for (const Params& c : space) {
    m.insert(c.i("BLOCK_SIZE_M"));
    k.insert(c.i("BLOCK_SIZE_K"));
  }
  EXPECT_EQ(m, (std::set<std::int64_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(k, (std::set<std::int64_t>{64, 128, 256}));
}

TEST(TritonSpace, DropsWhatTheDevicesSharedMemoryCannotHold) {
  const auto space = peers::triton_space(problem(64), h200());
  EXPECT_LT(space.size(), 1920u);
  EXPECT_GT(space.size(), 1000u);
  Params big{{"BLOCK_SIZE_M", std::int64_t{256}}, {"BLOCK_SIZE_N", std::int64_t{256}}, {"BLOCK_SIZE_K", std::int64_t{256}},
             {"GROUP_SIZE_M", std::int64_t{1}},   {"num_warps", std::int64_t{8}},     {"num_stages", std::int64_t{5}}};
  EXPECT_NE(peers::triton_invalid_reason(problem(64), big, h200()).find("shared memory"), std::string::npos);
}

TEST(TritonSpace, DefaultIsValidAndFollowsTheTokenCount) {
  for (std::int64_t t : {1, 48, 200, 4096}) {
    const Params d = peers::triton_default(problem(t));
    EXPECT_EQ(peers::triton_invalid_reason(problem(t), d, h200()), "") << t;
  }
  EXPECT_EQ(peers::triton_default(problem(1)).i("BLOCK_SIZE_M"), 16);
  EXPECT_EQ(peers::triton_default(problem(4096)).i("BLOCK_SIZE_M"), 128);
}

TEST(TritonSpace, RefusesTilesTritonCannotBuild) {
  Params c = peers::triton_default(problem(64));
  c.set("BLOCK_SIZE_N", std::int64_t{48});
  EXPECT_NE(peers::triton_invalid_reason(problem(64), c, h200()).find("power of two"), std::string::npos);
}

// fp8 block-scaled: a K step stays inside one 128-wide scale block (vLLM's tuner filter for
// block_shape [128, 128]); the default is vLLM's fp8 rule by token count.
TEST(TritonSpace, Fp8KeepsEachKStepInsideAScaleBlock) {
  const Params fp8 = problem(64, "fp8");
  std::set<std::int64_t> k;
  for (const Params& c : peers::triton_space(fp8, h200())) k.insert(c.i("BLOCK_SIZE_K"));
  EXPECT_EQ(k, (std::set<std::int64_t>{64, 128}));
  Params c = peers::triton_default(fp8);
  c.set("BLOCK_SIZE_K", std::int64_t{256});
  EXPECT_NE(peers::triton_invalid_reason(fp8, c, h200()).find("scale block"), std::string::npos);
  for (std::int64_t t : {1, 4, 8, 16, 64, 4096}) {
    const Params f = problem(t, "fp8");
    const Params d = peers::triton_default(f);
    EXPECT_EQ(peers::triton_invalid_reason(f, d, h200()), "") << t;
    EXPECT_EQ(d.i("BLOCK_SIZE_K"), 128);
    EXPECT_EQ(d.i("BLOCK_SIZE_M"), t <= 64 ? 16 : 64) << t;
    EXPECT_EQ(d.i("BLOCK_SIZE_N"), t <= 8 ? 64 : 128) << t;
  }
}

TEST(EngineFamily, KeepsMoebenchsReferenceAndNamesThePeer) {
  const FamilyDesc& f = peers::engine_family(peers::Engine::sglang, "gmm");
  ASSERT_TRUE(f.reference && f.validate);
  ASSERT_NE(f.backend(Backend::cpu), nullptr);
  ASSERT_NE(f.backend(Backend::cuda), nullptr);
  EXPECT_EQ(peer_of(*f.backend(Backend::cuda), {}), "SGLang Triton");
  EXPECT_THROW(peers::engine_family(peers::Engine::vllm, "router"), Error);
}

TEST(EngineFamily, RunOutsideTheEngineWorkerSaysWhere) {
  const FamilyDesc& f = peers::engine_family(peers::Engine::vllm, "gmm");
  try {
    f.backend(Backend::cpu)->run(problem(4), peers::triton_default(problem(4)), {}, {}, {});
    FAIL() << "ran without the engine's worker";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("moebench.peers.worker"), std::string::npos) << e.what();
  }
}

}  // namespace
