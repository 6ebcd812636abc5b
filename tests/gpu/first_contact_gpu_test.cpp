// What the CPU cannot show about the cuda host code: launch plans and kernel counts on a real
// device, the validation gate on the bench's own tensors, kernel attributes, NVML readings and
// the device-memory refusal with the real free memory. Skips where no GPU is visible.
#include <gtest/gtest.h>

#include "gmm/mma/cuda_configs.hpp"
#include "support/gmm_problems.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "require_gpu.hpp"
#include "tuner/measure/cupti_timer.hpp"
#include "tuner/measure/memory_check.hpp"
#include "tuner/measure/nvml.hpp"
#include "tuner/measure/timer_cuda.hpp"

using namespace moe;
using namespace moe::tuner;

namespace {

Prepared decode_gmm() {
  return prepare(family("gmm"), moe::testing::gmm_problem(8, 64, 8, 0, 2048, 768, 16), moe::testing::seeded(3));
}

}  // namespace

// The decode gmm launches its tile map, the GEMM and, with split-K, the finalize pass.
TEST(FirstContactGpu, SplitKGmmCountsThreeKernelsAndTimesThem) {
  REQUIRE_GPU();
  const Prepared p = decode_gmm();
  CudaBench b(p, cuda_device_info(0), TimerMode::cold, true);
  const Params config = gmm::cuda::config_params(gmm::cuda::Config{{16, 64, 64, 1, 4, 4}, 4, 1});
  b.set_config(config);
  EXPECT_EQ(b.kernels_per_call(), 3);
  const CudaCallCounts before = cuda_call_counts();
  for (int i = 0; i < 10; ++i) EXPECT_GT(b.sample().us, 0.0);
  const CudaCallCounts after = cuda_call_counts();
  EXPECT_EQ(after.blocks_per_sm, before.blocks_per_sm) << "a timed call queried occupancy";
  EXPECT_EQ(after.set_max_smem, before.set_max_smem);
  EXPECT_EQ(after.launches - before.launches, 30u);
  std::string why;
  if (CuptiKernelTimer::get(&why)) {
    EXPECT_EQ(b.timer(), "cupti") << b.note();
    EXPECT_EQ(b.note().find("CUPTI reported"), std::string::npos) << b.note();
  }
  const auto attrs = b.kernel_attributes();
  ASSERT_EQ(attrs.size(), 3u) << attrs.dump();
  for (auto& k : attrs) {
    EXPECT_GT(k.value("registers", 0), 0) << k.dump();
    EXPECT_GT(k.value("grid", 0u), 0u) << k.dump();
  }
  std::printf("kernel attributes: %s\n", attrs.dump().c_str());
}

TEST(FirstContactGpu, GateRunsOnTheBenchsOwnTensors) {
  REQUIRE_GPU();
  const Prepared p = decode_gmm();
  CudaBench b(p, cuda_device_info(0), TimerMode::cold, true);
  const Params config = gmm::cuda::config_params(gmm::cuda::Config{{16, 64, 64, 1, 4, 4}, 1, 1});
  const Outcome o = b.validate(config);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  // Timing afterwards still works: validate leaves the bench without a current config.
  b.set_config(config);
  EXPECT_GT(b.sample().us, 0.0);
}

TEST(FirstContactGpu, DeviceRefusalUsesTheRealFreeMemory) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  Params pr = moe::testing::gmm_preset("kimi-k2");
  pr.set("tokens", std::int64_t{64});
  pr.set("experts", std::int64_t{4096});  // 240 GB of w13 at kimi-k2's shape: no device holds it
  const Params p = complete(family("gmm").problem_params, pr, "gmm");
  try {
    check_device_fits(family("gmm"), p, dev, 0, "");
    FAIL() << "not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(cudaMemGetInfo)"), std::string::npos) << e.what();
  }
}

TEST(FirstContactGpu, NvmlReadsTheClocksOrSaysWhy) {
  REQUIRE_GPU();
  const GpuState s = read_gpu_state(cuda_pci_bus_id(0));
  if (!s.ok) GTEST_SKIP() << s.why_not;
  EXPECT_GT(s.sm_mhz, 0u);
  EXPECT_GT(s.default_sm_mhz, 0u);
  std::printf("NVML: %s\n", to_json(s).dump().c_str());
}
