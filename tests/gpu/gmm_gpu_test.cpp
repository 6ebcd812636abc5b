// gmm on the GPU: every cuda config against the fp64 reference (sampled rows on large
// problems, padding rows exactly zero, every row written) and against cuBLAS run per expert
// (every element), on edge shapes and the presets' shapes. Skipped where no device is visible.
// Written without a GPU at hand: the messages name the config and problem of any failure.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "require_gpu.hpp"
#include "support/gmm_problems.hpp"
#include "gmm/cublas/configs.hpp"
#include "gmm/cublas_reference.hpp"
#include "gmm/mma/cuda_configs.hpp"
#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_preset;
using testing::gmm_problem;
using testing::kPresets;
using testing::seeded;
using tuner::DeviceTensors;
using tuner::Prepared;

const FamilyDesc& F() { return gmm_family(); }
const BackendImpl& impl() { return F().need_backend(Backend::cuda); }

Tensor i32_tensor(std::vector<std::int32_t> v) {
  Tensor t(DType::i32, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.data<std::int32_t>()[i] = v[i];
  return t;
}

// A prepared problem with its inputs on the device and the cuBLAS-per-expert output, for up
// also with gate and up rounded as the wgmma path stores them.
struct Case {
  Prepared p;
  DeviceTensors din;
  Tensor cublas, cublas_rounded;
  Case(const Params& pr, const InputOptions& o, TensorMap given = {})
      : p(tuner::prepare(F(), pr, o, std::move(given))), din(DeviceTensors::upload(p.inputs)) {
    cublas = gmm::cublas_output(p.problem, din.refs(), p.inputs);
    if (!GmmSpec::parse(p.problem).down) cublas_rounded = gmm::cublas_output(p.problem, din.refs(), p.inputs, true);
  }
  const Tensor& cublas_for(const Params& config) const {
    // The wgmma path and cuBLAS's grouped GEMM store gate|up in the activations' dtype.
    const bool rounded = config.s("kernel") == "wgmma" || config.s("kernel") == "cublas";
    return rounded && !GmmSpec::parse(p.problem).down ? cublas_rounded : cublas;
  }
};

// Runs one config on the device: the mma kernel with its CTA cap, the wgmma one (no cap: CUTLASS
// sizes its persistent grid) through `ws` when given (its plan is kept per workspace).
void run_config(const Case& c, const Params& config, DeviceTensors& dout, int max_ctas, DeviceBuffer* given_ws) {
  const GmmSpec s = GmmSpec::parse(c.p.problem);
  if (!gmm::cublas::peer(config).empty()) {  // the library peers, through the backend's own run
    DeviceBuffer ws(impl().workspace_bytes(c.p.problem, config));
    LaunchContext ctx;
    ctx.workspace = ws.get();
    ctx.workspace_bytes = ws.size();
    impl().run(c.p.problem, config, c.din.refs(), dout.refs(), ctx);
    cuda_check(cudaDeviceSynchronize(), "gmm library peer");
    return;
  }
  if (gmm::wgmma::selected(config)) {
    const auto cfg = gmm::wgmma::parse_config(config);
    DeviceBuffer own(given_ws ? 0 : gmm::wgmma::workspace_bytes(s, cfg));
    DeviceBuffer& ws = given_ws ? *given_ws : own;
    gmm::wgmma::run(s, cfg, c.din.refs(), dout.refs(), ws.get(), ws.size(), nullptr);
    return;
  }
  const gmm::cuda::Config cfg = gmm::cuda::parse_config(config);
  DeviceBuffer ws(gmm::cuda::workspace_bytes(s, cfg));
  gmm::cuda::run(s, cfg, c.din.refs(), dout.refs(), ws.get(), ws.size(), nullptr, max_ctas);
}

// One config: poisoned outputs, run, synchronise, both checks. Empty string: pass.
std::string check(const Case& c, const Params& config, int max_ctas = 0, Tensor* out = nullptr,
                  DeviceBuffer* ws = nullptr) {
  const GmmSpec s = GmmSpec::parse(c.p.problem);
  const std::string what = c.p.problem.str() + " config " + config.str() +
                           (max_ctas ? " max_ctas=" + std::to_string(max_ctas) : std::string()) + ": ";
  try {
    DeviceTensors dout = DeviceTensors::alloc(c.p.output_specs);
    dout.poison();
    run_config(c, config, dout, max_ctas, ws);
    cuda_check(cudaDeviceSynchronize(), "gmm kernel");
    TensorMap got = dout.download();
    const Validation v = F().validate(c.p.problem, c.p.inputs, got, c.p.reference);
    const Check cb = gmm::compare_to_cublas(c.p.problem, got.at(s.out_name()), c.cublas_for(config));
    if (out) *out = got.at(s.out_name());
    std::string msg;
    if (!v.ok) msg += what + v.summary() + "\n";
    if (!cb.ok)
      msg += what + cb.tensor + " mismatches=" + std::to_string(cb.mismatches) + " nan=" + std::to_string(cb.nans) +
             " unwritten=" + std::to_string(cb.unwritten) + " relL2=" + std::to_string(cb.rel_l2) + " " + cb.detail +
             "\n";
    return msg;
  } catch (const std::exception& e) {
    return what + "threw: " + e.what() + "\n";
  }
}

class GmmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    dev = cuda_device_info(0);
  }
  // Every config of the space (full or curated) must pass; failures are listed, not just counted.
  void all_pass(const Case& c, bool full, int max_ctas = 0) {
    const auto space = impl().space(c.p.problem, dev, full);
    ASSERT_FALSE(space.empty()) << c.p.problem.str();
    std::string fails;
    for (auto& cfg : space) fails += check(c, cfg, max_ctas);
    EXPECT_TRUE(fails.empty()) << fails;
  }
  DeviceInfo dev;
};

TEST_F(GmmGpu, EveryConfigOnAnEdgyShape) {
  // D=264 and I=200: N tails for every block_n, K not a multiple of 64; align 8, a shared expert.
  for (const char* dt : {"bf16", "f16"})
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_problem(40, 8, 2, 1, 264, 200, 8, stage, dt);
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      const Case c(pr, seeded(3));
      all_pass(c, true);
    }
}

TEST_F(GmmGpu, PersistentCtasWalkSeveralTiles) {
  // Few CTAs for many tiles: each CTA runs the tile loop many times, reusing its stages.
  for (const char* stage : {"up", "down"}) {
    const Case c(gmm_problem(200, 8, 2, 0, 192, 136, 16, stage), seeded(4, "zipf"));
    for (int ctas : {1, 3, 7}) all_pass(c, true, ctas);
  }
}

TEST_F(GmmGpu, EdgeSegments) {
  // Empty experts, a 1-row expert, 37 rows (no block_m divides it), everything on one expert,
  // and segments longer than every block_m.
  for (auto offs : std::vector<std::vector<std::int32_t>>{
           {0, 0, 1, 1, 38}, {0, 0, 0, 50, 50}, {0, 1, 2, 3, 4}, {0, 129, 129, 300, 300}})
    for (const char* stage : {"up", "down"}) {
      TensorMap given;
      given["offsets"] = i32_tensor(offs);
      const Case c(gmm_problem(150, 4, 2, 0, 128, 96, 1, stage), seeded(7), given);  // 150 tokens x 2 slots cover 300 rows
      all_pass(c, true);
    }
}

TEST_F(GmmGpu, NoRowsIsANoOp) {
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 0});
  Params pr = gmm_problem(4, 8, 2, 0, 64, 64, 8);
  pr.set("expert_begin", std::int64_t{2});
  pr.set("expert_end", std::int64_t{4});
  const Case c(pr, seeded(2), given);
  EXPECT_EQ(check(c, impl().default_config(c.p.problem, dev)), "");
}

TEST_F(GmmGpu, ManyExpertsMostEmptyAndExpertSlices) {
  // Kimi-K2's 384+1 experts at few tokens: the tile map skips the empty ones; then an EP slice.
  for (const char* stage : {"up", "down"}) {
    const Case c(gmm_problem(6, 384, 8, 1, 256, 128, 16, stage), seeded(5));
    all_pass(c, false);
    Params sl = gmm_problem(64, 384, 8, 1, 256, 128, 16, stage);
    sl.set("expert_begin", std::int64_t{300});
    sl.set("expert_end", std::int64_t{385});
    const Case d(sl, seeded(6, "zipf"));
    all_pass(d, false);
  }
}

TEST_F(GmmGpu, SplitKIsDeterministic) {
  const Case c(gmm_problem(4, 64, 8, 0, 2048, 768, 16, "up"), seeded(8));
  const Params cfg = gmm::cuda::config_params({{16, 64, 64, 1, 4, 4}, 4});
  Tensor a, b;
  ASSERT_EQ(check(c, cfg, 0, &a), "");
  ASSERT_EQ(check(c, cfg, 0, &b), "");
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
}

// Local experts such that the stage's weights stay near `budget` bytes (the whole model where it fits).
Params preset_problem(const std::string& name, std::int64_t T, const char* stage, double budget) {
  Params pr = gmm_preset(name);
  const std::int64_t Et = pr.i("experts") + pr.i("shared");
  const double per = (std::string(stage) == "up" ? 2.0 : 1.0) * static_cast<double>(pr.i("hidden")) *
                     static_cast<double>(pr.i("intermediate")) * 2.0;
  const std::int64_t local = std::clamp<std::int64_t>(static_cast<std::int64_t>(budget / per), 1, Et);
  pr.set("tokens", T);
  pr.set("stage", std::string(stage));
  // The slice ends at the last expert so fused shared experts (every token) are in it.
  pr.set("expert_begin", Et - local);
  if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
  return pr;
}

TEST_F(GmmGpu, PresetsDecodeAndPrefillCuratedSpace) {
  for (const auto& name : kPresets)
    for (std::int64_t T : {1, 16, 256})
      for (const char* stage : {"up", "down"}) {
        const Case c(preset_problem(name, T, stage, 1.5e9), seeded(9));
        all_pass(c, false);
        EXPECT_EQ(check(c, impl().default_config(c.p.problem, dev)), "");
      }
}

TEST_F(GmmGpu, Qwen3WholeModelLargeBatch) {
  // All 128 experts at prefill sizes: large M tiles, the sampled fp64 reference, cuBLAS on everything.
  for (std::int64_t T : {2048, 8192})
    for (const char* stage : {"up", "down"}) {
      const Case c(preset_problem("qwen3-30b-a3b", T, stage, 1e12), seeded(10));
      all_pass(c, false);
    }
}

TEST_F(GmmGpu, ThroughTheHarness) {
  // The path the run and sweep commands take: BackendImpl::run with the harness's workspace.
  for (const char* stage : {"up", "down"})
    for (std::int64_t T : {1, 64}) {
      const Prepared p = tuner::prepare(F(), preset_problem("qwen3-30b-a3b", T, stage, 1e12), seeded(12));
      for (const Params& cfg : {Params{}, gmm::cuda::config_params({{16, 64, 64, 1, 4, 4}, 4})}) {
        const Params full = tuner::complete_config(F(), Backend::cuda, p.problem, cfg, dev);
        const auto o = tuner::run_cuda(p, full, dev);
        EXPECT_TRUE(o.validation.ok) << p.problem.str() << " " << full.str() << ": " << o.validation.summary();
      }
    }
}

// The wgmma configs of the full space, named (the spaces above include them on sm_90 only).
std::vector<Params> wgmma_configs(const Params& problem, const DeviceInfo& dev) {
  std::vector<Params> v;
  for (auto& cfg : impl().space(problem, dev, true))
    if (gmm::wgmma::selected(cfg)) v.push_back(cfg);
  return v;
}

TEST_F(GmmGpu, WgmmaEveryShapeAgainstCublas) {
  if (dev.cc_major != 9 || dev.cc_minor != 0) GTEST_SKIP() << "kernel=wgmma needs sm_90; this is " << dev.name;
  // Ragged experts (empty, 1 row, no tile multiple), N and K not multiples of any tile, f16 where built.
  for (const char* dt : {"bf16", "f16"})
    for (const char* stage : {"up", "down"}) {
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 1, 38, 300, 300, 433, 433});
      Params pr = gmm_problem(300, 8, 2, 0, 264, 200, 1, stage, dt);
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      const Case c(pr, seeded(13), given);
      const auto cfgs = wgmma_configs(c.p.problem, dev);
      std::size_t built = 0;
      for (auto& e : gmm::wgmma::entries()) built += e.get(parse_dtype(dt), std::string(stage) == "down") ? 1 : 0;
      EXPECT_EQ(cfgs.size(), built);
      std::string fails;
      for (auto& cfg : cfgs) fails += check(c, cfg);
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

TEST_F(GmmGpu, WgmmaPlanServesNewTensorsAndGraphs) {
  if (dev.cc_major != 9 || dev.cc_minor != 0) GTEST_SKIP() << "kernel=wgmma needs sm_90; this is " << dev.name;
  for (const char* stage : {"up", "down"}) {
    Params pr = gmm_problem(512, 16, 4, 0, 512, 256, 8, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    const Case a(pr, seeded(14)), b(pr, seeded(15, "zipf"));
    for (auto& cfg : wgmma_configs(a.p.problem, dev)) {
      // One workspace, so one plan: the second call's tensors and row counts reach CUTLASS
      // only through the arrays the setup kernel writes.
      const GmmSpec s = GmmSpec::parse(a.p.problem);
      DeviceBuffer ws(gmm::wgmma::workspace_bytes(s, gmm::wgmma::parse_config(cfg)));
      EXPECT_EQ(check(a, cfg, 0, nullptr, &ws), "");
      EXPECT_EQ(check(b, cfg, 0, nullptr, &ws), "");
      // A planned call captures into a CUDA graph (no sync, no attribute calls) and replays right.
      DeviceTensors dout = DeviceTensors::alloc(a.p.output_specs);
      dout.poison();
      cudaStream_t st;
      ASSERT_EQ(cudaStreamCreate(&st), cudaSuccess);
      cudaGraph_t g;
      ASSERT_EQ(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      gmm::wgmma::run(s, gmm::wgmma::parse_config(cfg), a.din.refs(), dout.refs(), ws.get(), ws.size(), st);
      ASSERT_EQ(cudaStreamEndCapture(st, &g), cudaSuccess) << cfg.str();
      cudaGraphExec_t ex;
      ASSERT_EQ(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(ex, st), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
      const Validation v = F().validate(a.p.problem, a.p.inputs, dout.download(), a.p.reference);
      EXPECT_TRUE(v.ok) << cfg.str() << ": " << v.summary();
      cudaGraphExecDestroy(ex);
      cudaGraphDestroy(g);
      cudaStreamDestroy(st);
    }
  }
}

TEST_F(GmmGpu, DefaultsAreValidOnThisDevice) {
  for (const auto& name : kPresets)
    for (std::int64_t T : {1, 64, 4096, 16384})
      for (const char* stage : {"up", "down"}) {
        const Params pr = complete(F().problem_params, preset_problem(name, T, stage, 1e12), "gmm");
        const Params d = impl().default_config(pr, dev);
        EXPECT_EQ(impl().invalid_reason(pr, d, dev), "") << pr.str() << " " << d.str();
      }
}

}  // namespace
}  // namespace moe
