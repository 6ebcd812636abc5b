// The cuda router on a real device: every compiled config valid for each preset and edge
// shape, every logits dtype, token counts from 1 to 16384, validated against the reference;
// determinism; launcher errors; and a timing report of the headline presets.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "require_gpu.hpp"
#include "common/validate.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "router/cuda.hpp"
#include "support/router_cases.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using router_cases::with;


std::vector<router_cases::Case> all_cases() {
  auto cases = router_cases::presets();
  for (auto& e : router_cases::edges()) cases.push_back(e);
  return cases;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Every config of the full cuda space on one (case, dtype, T).
void check_every_config(const router_cases::Case& c, const std::string& dtype, std::int64_t T, const DeviceInfo& dev) {
  const Params prob = with(c.problem, T, dtype);
  InputOptions opt;
  opt.seed = 100 + static_cast<std::uint64_t>(T);
  const auto p = tuner::prepare(router_family(), prob, opt, router_cases::inputs(prob, c.data, T));
  const BackendImpl& cuda = router_family().need_backend(Backend::cuda);
  const auto space = cuda.space(p.problem, dev, true);
  ASSERT_FALSE(space.empty()) << c.name;
  for (const auto& cfg : space) {
    SCOPED_TRACE(c.name + " " + dtype + " T=" + std::to_string(T) + " " + cfg.str());
    tuner::Outcome o;
    ASSERT_NO_THROW(o = tuner::run_cuda(p, cfg, dev));
    EXPECT_TRUE(o.validation.ok) << o.validation.summary();
    if (c.data == "ties" || c.data == "nonfinite") {
      // Only exact ties or wide gaps: the device must break ties exactly as the reference.
      const Check ids = compare_exact("ids", o.outputs.at("ids"), p.reference.at("ids"));
      EXPECT_TRUE(ids.ok) << ids.detail;
    }
  }
}

TEST(RouterGpu, SmallBatchesEveryConfig) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  for (const auto& c : all_cases())
    for (const char* dt : {"bf16", "f16", "f32"})
      for (std::int64_t T : {1, 7, 64}) check_every_config(c, dt, T, dev);
}

TEST(RouterGpu, LargeBatchesEveryConfig) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  for (const auto& c : all_cases())
    for (const char* dt : {"bf16", "f16", "f32"})
      for (std::int64_t T : {1000, 16384}) check_every_config(c, dt, T, dev);
}

TEST(RouterGpu, DeterministicAcrossRunsAndLaunchShapes) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  const BackendImpl& cuda = router_family().need_backend(Backend::cuda);
  for (const auto& c : all_cases()) {
    const Params prob = with(c.problem, 20000, "bf16");
    const auto p = tuner::prepare(router_family(), prob, InputOptions{}, router_cases::inputs(prob, c.data, 1));
    const auto space = cuda.space(p.problem, dev, true);
    ASSERT_FALSE(space.empty());
    // Rows never depend on the grid: every warps-per-CTA of a kernel shape gives the same bits,
    // and so do repeated runs.
    tuner::Outcome first;
    Params first_cfg;
    for (const auto& cfg : space) {
      SCOPED_TRACE(c.name + " " + cfg.str());
      const auto a = tuner::run_cuda(p, cfg, dev), b = tuner::run_cuda(p, cfg, dev);
      EXPECT_TRUE(a.validation.ok) << a.validation.summary();
      EXPECT_TRUE(same_bytes(a.outputs.at("ids"), b.outputs.at("ids")));
      EXPECT_TRUE(same_bytes(a.outputs.at("weights"), b.outputs.at("weights")));
      Params shape = cfg;
      shape.erase("warps");
      if (first.outputs.empty() || shape != first_cfg) {
        first = a;
        first_cfg = shape;
      } else {
        EXPECT_TRUE(same_bytes(a.outputs.at("ids"), first.outputs.at("ids")));
        EXPECT_TRUE(same_bytes(a.outputs.at("weights"), first.outputs.at("weights")));
      }
    }
  }
}

TEST(RouterGpu, LauncherRejectsBadCallsWithoutLaunching) {
  REQUIRE_GPU();
  const Params prob = complete(router_family().problem_params,
                               with(router_cases::problem(256, 8, 1, 8, 4, "sigmoid", 1), 4, "bf16"), "router");
  const RouterSpec sp = RouterSpec::from(prob);
  DeviceBuffer logits(4 * 256 * 2 + 64), bias(256 * 4), w(4 * 9 * 4), ids(4 * 9 * 4);
  const router::CudaConfig good{32, 8, 16, 4};
  auto* base = static_cast<char*>(logits.get());
  EXPECT_THROW(router::router_cuda(sp, good, base + 2, static_cast<float*>(bias.get()), static_cast<float*>(w.get()),
                                   static_cast<std::int32_t*>(ids.get()), nullptr),
               Error);  // misaligned for 16-byte loads
  EXPECT_THROW(router::router_cuda(sp, {32, 4, 8, 4}, base, static_cast<float*>(bias.get()), static_cast<float*>(w.get()),
                                   static_cast<std::int32_t*>(ids.get()), nullptr),
               Error);  // 128 slots < 256 experts
  EXPECT_THROW(router::router_cuda(sp, good, base, nullptr, static_cast<float*>(w.get()),
                                   static_cast<std::int32_t*>(ids.get()), nullptr),
               Error);  // bias=1 without a bias
  EXPECT_NO_THROW(router::router_cuda(sp, good, base, static_cast<float*>(bias.get()), static_cast<float*>(w.get()),
                                      static_cast<std::int32_t*>(ids.get()), nullptr));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
