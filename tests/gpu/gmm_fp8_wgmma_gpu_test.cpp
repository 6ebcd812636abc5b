// fp8 gmm on the GPU through the cuda backend's wgmma path (CUTLASS's blockwise-scaled grouped
// GEMM, then silu*up+requant for up; down's epilogue writes bf16): every fp8 wgmma config against
// the fp8 reference (the family's validation: h codes within one e4m3 step and scales within
// one ulp; y_sorted by bf16's tolerance from the kernel's own quantized inputs), on ragged
// experts and on DeepSeek-V3's EP-8 shard. Skipped where no Hopper device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "require_gpu.hpp"
#include "support/gmm_problems.hpp"
#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_problem;
using testing::i32_tensor;
using testing::seeded;
using tuner::DeviceTensors;

Params fp8_problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t D, std::int64_t I,
                   const std::string& stage, const std::string& fmt) {
  Params p = gmm_problem(T, E, k, 0, D, I, 1, stage, "fp8");
  p.set("scale_fmt", fmt);
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return p;
}

// Every fp8 wgmma config of the full space on one problem; failures listed by config.
std::string check_all(const Params& problem, TensorMap given, const DeviceInfo& dev) {
  const FamilyDesc& F = gmm_family();
  const auto p = tuner::prepare(F, problem, seeded(17), std::move(given));
  const GmmSpec s = GmmSpec::parse(p.problem);
  const DeviceTensors din = DeviceTensors::upload(p.inputs);
  std::string fails;
  int ran = 0;
  for (const Params& cfg : F.need_backend(Backend::cuda).space(p.problem, dev, true)) {
    if (!gmm::wgmma::selected(cfg)) continue;
    ++ran;
    const std::string what = p.problem.str() + " config " + cfg.str() + ": ";
    try {
      DeviceTensors dout = DeviceTensors::alloc(p.output_specs);
      dout.poison();
      const auto c = gmm::wgmma::parse_config(cfg);
      DeviceBuffer ws(gmm::wgmma::workspace_bytes(s, c));
      gmm::wgmma::run(s, c, din.refs(), dout.refs(), ws.get(), ws.size(), nullptr);
      cuda_check(cudaDeviceSynchronize(), "gmm fp8 wgmma");
      const Validation v = F.validate(p.problem, p.inputs, dout.download(), p.reference);
      if (!v.ok) fails += what + v.summary() + "\n";
    } catch (const std::exception& e) {
      fails += what + "threw: " + e.what() + "\n";
    }
  }
  int built = 0;
  for (const auto& e : gmm::wgmma::entries()) built += e.get(DType::e4m3, s.down) ? 1 : 0;
  if (ran != built)
    fails += p.problem.str() + ": expected every fp8 wgmma config (" + std::to_string(built) + "), ran " +
             std::to_string(ran) + "\n";
  return fails;
}

class GmmFp8WgmmaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    dev = cuda_device_info(0);
    if (dev.cc_major != 9 || dev.cc_minor != 0) GTEST_SKIP() << "kernel=wgmma needs sm_90; this is " << dev.name;
  }
  DeviceInfo dev;
};

TEST_F(GmmFp8WgmmaGpu, RaggedExpertsBothStagesBothScaleFormats) {
  // Empty experts, a single row, segments that are no tile multiple; K over several scale blocks.
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"}) {
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 1, 38, 300, 300, 433, 433});
      EXPECT_EQ(check_all(fp8_problem(300, 8, 2, 512, 384, stage, fmt), std::move(given), dev), "") << stage << fmt;
    }
}

TEST_F(GmmFp8WgmmaGpu, DeepSeekV3ExpertParallelShard) {
  // 256 experts over EP 8 (32 local), hidden 7168, intermediate 2048, 512 tokens top-8.
  for (const char* stage : {"up", "down"}) {
    Params pr = fp8_problem(512, 256, 8, 7168, 2048, stage, "ue8m0");
    pr.set("expert_begin", std::int64_t{0});
    pr.set("expert_end", std::int64_t{32});
    EXPECT_EQ(check_all(pr, {}, dev), "") << stage;
  }
}

// The swapped-operand tiles put the weights on CUTLASS's M, and the 2x1 cluster pairs two weight
// tiles: down with hidden 640 has 5 weight tiles (the last cluster half past the weights); up
// with intermediate 384 has 6, so 3 clusters (fp8 needs I a multiple of 128, so up's 2I rows
// always make an even tile count). Few rows per expert, so the swapped tiles are the ones chosen.
TEST_F(GmmFp8WgmmaGpu, SwappedTilesOverAnOddCountOfWeightTiles) {
  for (const char* fmt : {"fp32", "ue8m0"}) {
    EXPECT_EQ(check_all(fp8_problem(24, 8, 2, 640, 256, "down", fmt), {}, dev), "") << "down D=640 " << fmt;
    EXPECT_EQ(check_all(fp8_problem(24, 8, 2, 256, 384, "up", fmt), {}, dev), "") << "up I=384 " << fmt;
  }
}

}  // namespace
}  // namespace moe
