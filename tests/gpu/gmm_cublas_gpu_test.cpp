// The library peers on the GPU: kernel=cublas (cuBLAS's grouped GEMM, bf16 and f16) and
// kernel=cublaslt (cuBLASLt's 1x128/128x128 block-scaled fp8 matmul per expert), each with
// moebench's epilogue, through the harness the tuner uses (plan, poisoned outputs and workspace,
// BackendImpl::run, the family's validation against the reference), up and down, on ragged
// experts (empty ones, a single row) and on an expert-parallel slice. Also the timed path: a
// planned call says it waits on the host and is timed with events, and a graph capture is
// refused with a reason. Skipped where no device is visible (cuBLASLt's fp8 where it is not sm_90).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "require_gpu.hpp"
#include "support/gmm_problems.hpp"
#include "support/prepared_problems.hpp"
#include "common/host_wait.hpp"
#include "gmm/cublas/configs.hpp"
#include "gmm/family.hpp"
#include "moe/cuda_device.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::fp8_gmm_problem;
using testing::gmm_problem;
using testing::i32_tensor;
using testing::prepare_seeded;

const FamilyDesc& F() { return gmm_family(); }

// Every config of the full space that runs `kernel`, through the harness; failures one line each.
std::string check(const Params& problem, TensorMap given, const std::string& kernel, std::uint64_t seed, int* ran) {
  const DeviceInfo dev = cuda_device_info(0);
  const tuner::Prepared p = prepare_seeded(F(), problem, std::move(given), "uniform", seed);
  std::string fails;
  for (const Params& cfg : F().need_backend(Backend::cuda).space(p.problem, dev, true)) {
    if (cfg.s("kernel") != kernel) continue;
    ++*ran;
    try {
      const Params full = tuner::complete_config(F(), Backend::cuda, p.problem, cfg, dev);
      const tuner::Outcome o = tuner::run_cuda(p, full, dev);
      if (!o.validation.ok) fails += p.problem.str() + " config " + cfg.str() + ": " + o.validation.summary() + "\n";
    } catch (const std::exception& e) {
      fails += p.problem.str() + " config " + cfg.str() + " threw: " + e.what() + "\n";
    }
  }
  return fails;
}

class GmmCublasGpu : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_GPU(); }
};

TEST_F(GmmCublasGpu, GroupedGemmBf16AndF16BothStagesRaggedExperts) {
  for (const char* dt : {"bf16", "f16"})
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_problem(60, 8, 2, 0, 512, 384, 1, stage, dt);
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 1, 38, 60, 60, 97, 97});
      int ran = 0;
      EXPECT_EQ(check(pr, std::move(given), "cublas", 3, &ran), "") << dt << " " << stage;
      EXPECT_EQ(ran, 1) << dt << " " << stage;
    }
}

TEST_F(GmmCublasGpu, GroupedGemmOnAnExpertParallelSliceAtDecodeAndPrefill) {
  // Qwen3-30B-A3B's 128 experts, local 32..63 (EP 4).
  for (std::int64_t T : {1, 16, 2048})
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_problem(T, 128, 8, 0, 2048, 768, 16, stage);
      pr.set("expert_begin", std::int64_t{32});
      pr.set("expert_end", std::int64_t{64});
      int ran = 0;
      EXPECT_EQ(check(pr, {}, "cublas", 7 + T, &ran), "") << stage << " T=" << T;
      EXPECT_EQ(ran, 1);
    }
}

TEST_F(GmmCublasGpu, CublasLtFp8BothStagesBothScaleFormats) {
  const DeviceInfo dev = cuda_device_info(0);
  if (dev.cc_major != 9 || dev.cc_minor != 0) GTEST_SKIP() << "cuBLASLt's block-scaled fp8 needs sm_90; " << dev.name;
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"}) {
      // K/128 = 4 (up, D=512) and 3 (down, I=384: the weight scales are repacked).
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 1, 38, 60, 60, 97, 97});
      int ran = 0;
      EXPECT_EQ(check(fp8_gmm_problem(60, 8, 2, 512, 384, 1, stage, fmt), std::move(given), "cublaslt", 5, &ran), "")
          << stage << " " << fmt;
      EXPECT_EQ(ran, std::string(stage) == "down" ? 2 : 1);
      // DeepSeek-V3 over EP 8 (32 local experts of 256), decode and prefill.
      for (std::int64_t T : {16, 512}) {
        Params pr = fp8_gmm_problem(T, 256, 8, 7168, 2048, 16, stage, fmt);
        pr.set("expert_begin", std::int64_t{64});
        pr.set("expert_end", std::int64_t{96});
        ran = 0;
        EXPECT_EQ(check(pr, {}, "cublaslt", 11 + T, &ran), "") << stage << " " << fmt << " T=" << T;
        EXPECT_GT(ran, 0);
      }
    }
}

TEST_F(GmmCublasGpu, APlannedCallWaitsOnTheHostAndIsNotCapturedInAGraph) {
  const tuner::Prepared p = prepare_seeded(F(), gmm_problem(64, 8, 2, 0, 512, 256, 1, "up"), {}, "uniform", 13);
  const BackendImpl& impl = F().need_backend(Backend::cuda);
  const Params cfg = tuner::complete_config(F(), Backend::cuda, p.problem, Params{{"kernel", std::string("cublas")}},
                                            cuda_device_info(0));
  const tuner::DeviceTensors din = tuner::DeviceTensors::upload(p.inputs);
  tuner::DeviceTensors dout = tuner::DeviceTensors::alloc(p.output_specs);
  const auto plan = impl.plan(p.problem, cfg, din.refs());
  ASSERT_TRUE(plan);
  EXPECT_TRUE(waits_on_host(plan.get()));
  EXPECT_LT(plan->kernels, 0);  // cuBLAS launches its own kernels
  DeviceBuffer ws(impl.workspace_bytes(p.problem, cfg));
  cudaStream_t st = nullptr;
  cuda_check(cudaStreamCreate(&st), "cudaStreamCreate");
  LaunchContext ctx;
  ctx.stream = st;
  ctx.workspace = ws.get();
  ctx.workspace_bytes = ws.size();
  ctx.plan = plan.get();
  impl.run(p.problem, cfg, din.refs(), dout.refs(), ctx);
  cuda_check(cudaStreamSynchronize(st), "cuBLAS call");
  const Validation v = F().validate(p.problem, p.inputs, dout.download(), p.reference);
  EXPECT_TRUE(v.ok) << v.summary();
  cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  std::string why;
  try {
    impl.run(p.problem, cfg, din.refs(), dout.refs(), ctx);
  } catch (const std::exception& e) {
    why = e.what();
  }
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(st, &g);
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
  EXPECT_NE(why.find("which a CUDA graph cannot capture"), std::string::npos) << why;
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace moe
