// Launch plans without a GPU: the CUDA runtime is replaced by a counting fake (the seam in
// moe/cuda_launch_api.hpp), so these tests see every query and launch the host code makes.
#include <gtest/gtest.h>

#include <cstddef>
#include <thread>
#include <vector>

#include "gmm/mma/cuda_configs.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "layer/family.hpp"
#include "runtime/current_device.hpp"
#include "support/described_devices.hpp"
#include "support/gmm_problems.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "moe/programmatic_launch.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/cupti_timer.hpp"

namespace moe {
namespace {

struct Launch {
  const void* func;
  unsigned grid, block;
  std::size_t smem;
  bool programmatic;
};
std::vector<Launch> launches;
int sm_calls = 0, smem_calls = 0, occ_calls = 0;

int current_device = 0;

const CudaRuntimeCalls kFake{
    [] { return current_device; },
    [](int) { return ++sm_calls, 132; },
    [](const void*, std::size_t) { ++smem_calls; },
    [](const void*, int, std::size_t) { return ++occ_calls, 2; },
    // As the real launch does, the fake reads whether this launch is programmatic.
    [](const void* f, unsigned g, unsigned b, std::size_t s, void*, void**) {
      launches.push_back({f, g, b, s, programmatic_launch()});
    },
};

class LaunchPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    launches.clear();
    sm_calls = smem_calls = occ_calls = 0;
    current_device = 0;
    set_cuda_runtime_calls_for_testing(&kFake);
  }
  void TearDown() override { set_cuda_runtime_calls_for_testing(nullptr); }
  int queries() const { return sm_calls + smem_calls + occ_calls; }
};

// A small problem made on the host; the fake launch never reads its pointers.
struct GmmCase {
  tuner::Prepared p = testing::prepare_seeded(family("gmm"), testing::gmm_problem(24, 8, 2, 0, 256, 128, 16));
  GmmSpec s = GmmSpec::parse(p.problem);
  TensorMap out = allocate(p.output_specs);
  std::int64_t rows() const { return p.inputs.at("x_sorted").shape()[0]; }
};

gmm::cuda::Config cfg(int bm, int bn, int bk, int wm, int wn, int st, int split = 1) {
  return gmm::cuda::Config{{bm, bn, bk, wm, wn, st}, split, 1};
}

TEST_F(LaunchPlanTest, GmmPlannedCallsOnlyLaunch) {
  GmmCase g;
  // 128x128x64, 3 stages: 110 KiB of shared memory, so the opt-in is part of the plan.
  const auto c = cfg(128, 128, 64, 2, 2, 3);
  ASSERT_GT(gmm::cuda::smem_bytes(c.shape, g.s.e_local()), 48u * 1024);
  const auto plan = gmm::cuda::plan(g.s, c, g.rows());
  EXPECT_EQ(sm_calls, 1);
  EXPECT_EQ(smem_calls, 1);
  EXPECT_EQ(occ_calls, 1);
  // The schedule kernel that writes the tile map, then the gmm kernel.
  ASSERT_EQ(plan->kernels, 2);
  ASSERT_EQ(plan->launches.size(), 2u);
  std::vector<std::byte> ws(gmm::cuda::workspace_bytes(g.s, c));
  const int before = queries();
  for (int i = 0; i < 5; ++i)
    gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), ws.data(), ws.size(), nullptr, 0, plan.get());
  EXPECT_EQ(queries(), before) << "a planned call queried the runtime";
  ASSERT_EQ(launches.size(), 10u);
  EXPECT_EQ(launches[0].grid, 1u);
  EXPECT_EQ(launches[0].block, static_cast<unsigned>(gmm::cuda::kScheduleThreads));
  // The persistent grid: at most the resident CTAs (2 per SM x 132 SMs), at least one tile's worth.
  EXPECT_EQ(launches[1].grid, plan->launches[1].grid);
  EXPECT_LE(launches[1].grid, 264u);
  EXPECT_GE(launches[1].grid, 1u);
  EXPECT_EQ(launches[1].block, 128u);
  EXPECT_EQ(launches[1].smem, gmm::cuda::smem_bytes(c.shape, g.s.e_local()));
}

TEST_F(LaunchPlanTest, GmmSplitKLaunchesTheFinalizeToo) {
  GmmCase g;
  const auto c = cfg(16, 64, 64, 1, 4, 4, 2);
  const auto plan = gmm::cuda::plan(g.s, c, g.rows());
  ASSERT_EQ(plan->kernels, 3);
  std::vector<float> ws(gmm::cuda::workspace_bytes(g.s, c) / sizeof(float));
  gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), ws.data(), ws.size() * sizeof(float), nullptr, 0, plan.get());
  ASSERT_EQ(launches.size(), 3u);  // schedule, gmm, finalize
  EXPECT_NE(launches[1].func, launches[2].func);
  EXPECT_NE(launches[0].func, launches[2].func);
  EXPECT_EQ(launches[2].block, 256u);
}

TEST_F(LaunchPlanTest, GmmUnplannedCallsQueryOnceThenHitTheCache) {
  GmmCase g;
  const auto c = cfg(64, 128, 64, 2, 2, 3);
  std::vector<std::byte> ws(gmm::cuda::workspace_bytes(g.s, c));
  gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), ws.data(), ws.size(), nullptr);
  const int first = queries();
  EXPECT_GE(first, 2);
  for (int i = 0; i < 3; ++i) gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), ws.data(), ws.size(), nullptr);
  EXPECT_EQ(queries(), first);
  EXPECT_EQ(launches.size(), 8u);  // the schedule kernel and the gmm kernel per call
}

TEST_F(LaunchPlanTest, GmmBackendPlanIsWhatRunUses) {
  GmmCase g;
  const BackendImpl& b = family("gmm").need_backend(Backend::cuda);
  ASSERT_TRUE(b.plan);
  const Params config = gmm::cuda::config_params(cfg(16, 64, 64, 1, 4, 4, 4));
  const auto plan = b.plan(g.p.problem, config, refs(g.p.inputs));
  EXPECT_EQ(plan->kernels, 3);  // schedule, gmm, finalize
  std::vector<std::byte> ws(b.workspace_bytes(g.p.problem, config));
  LaunchContext ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  ctx.plan = plan.get();
  const int before = queries();
  const std::uint64_t launched = kernel_launches();
  b.run(g.p.problem, config, refs(g.p.inputs), refs(g.out), ctx);
  EXPECT_EQ(queries(), before);
  EXPECT_EQ(kernel_launches() - launched, 3u);
  // The plan carries the parsed problem and config: planned calls parse nothing again.
  const std::uint64_t parses = GmmSpec::parses();
  for (int i = 0; i < 3; ++i) b.run(g.p.problem, config, refs(g.p.inputs), refs(g.out), ctx);
  EXPECT_EQ(GmmSpec::parses(), parses) << "a planned call re-parsed the gmm problem";
  EXPECT_EQ(kernel_launches() - launched, 12u);
  // Unplanned, a call parses once.
  ctx.plan = nullptr;
  b.run(g.p.problem, config, refs(g.p.inputs), refs(g.out), ctx);
  EXPECT_EQ(GmmSpec::parses(), parses + 1);
}

// A wgmma call launches setup + GEMM (+ silu*up for up): its plan says so, so the bench's
// check of the launches it counted (the CUTLASS GEMM through count_launch) holds on a GPU.
TEST_F(LaunchPlanTest, GmmWgmmaPlanCountsSetupGemmAndSilu) {
  GmmCase g;
  const BackendImpl& b = family("gmm").need_backend(Backend::cuda);
  const Params config = complete(b.config_params,
                                 Params{{"kernel", std::string("wgmma")}, {"block_m", std::int64_t{128}},
                                        {"block_n", std::int64_t{128}}, {"block_k", std::int64_t{64}}},
                                 "config");
  EXPECT_EQ(b.plan(g.p.problem, config, refs(g.p.inputs))->kernels, 3);  // up
  Params down = g.p.problem;
  down.set("stage", std::string("down"));
  const tuner::Prepared d = testing::prepare_seeded(family("gmm"), down);
  EXPECT_EQ(b.plan(d.problem, config, refs(const_cast<TensorMap&>(d.inputs)))->kernels, 2);
  EXPECT_EQ(queries(), 0) << "planning a wgmma config asks the device nothing before its first call";
  // count_launch counts and records like a launch made here, without launching.
  std::vector<LaunchRecord> seen;
  record_launches(&seen);
  const std::uint64_t before = kernel_launches();
  count_launch(&kFake, 7, 384, 1024);
  record_launches(nullptr);
  EXPECT_EQ(kernel_launches() - before, 1u);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].grid, 7u);
  EXPECT_EQ(seen[0].block, 384u);
  EXPECT_TRUE(launches.empty());
}

TEST_F(LaunchPlanTest, RouterQueriesOccupancyOnceAndCountsItsLaunch) {
  const FamilyDesc& f = family("router");
  const tuner::Prepared p = testing::prepare_seeded(
      f, Params{{"tokens", std::int64_t{64}}, {"experts", std::int64_t{64}}, {"topk", std::int64_t{4}}, {"dtype", "f32"}});
  TensorMap out = allocate(p.output_specs);
  const BackendImpl& b = f.need_backend(Backend::cuda);
  const Params config = tuner::complete_config(f, Backend::cuda, p.problem, Params{}, DeviceInfo{});
  b.run(p.problem, config, refs(const_cast<TensorMap&>(p.inputs)), refs(out), LaunchContext{});
  const int first = queries();
  b.run(p.problem, config, refs(const_cast<TensorMap&>(p.inputs)), refs(out), LaunchContext{});
  EXPECT_EQ(queries(), first);
  EXPECT_EQ(launches.size(), 2u);
}

TEST_F(LaunchPlanTest, MultiCtaDispatchLaunchesFourKernels) {
  // The call CUPTI used to under-time without a word: histogram, scan, scatter and gather.
  const FamilyDesc& f = family("dispatch");
  const tuner::Prepared p = testing::prepare_seeded(
      f, Params{{"tokens", std::int64_t{256}}, {"experts", std::int64_t{64}}, {"topk", std::int64_t{8}},
                {"hidden", std::int64_t{512}}, {"align", std::int64_t{16}}});
  TensorMap out = allocate(p.output_specs);
  const BackendImpl& b = f.need_backend(Backend::cuda);
  const Params config = tuner::complete_config(
      f, Backend::cuda, p.problem, Params{{"aligner", std::string("multi")}, {"align_threads", std::int64_t{256}}},
      DeviceInfo{});
  std::vector<std::byte> ws(b.workspace_bytes(p.problem, config));
  LaunchContext ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  b.run(p.problem, config, refs(const_cast<TensorMap&>(p.inputs)), refs(out), ctx);
  ASSERT_EQ(launches.size(), 4u);
  for (std::size_t i = 0; i < launches.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(launches[i].func, launches[j].func) << i << " " << j;
}

// A view `bytes` past the start of `t`: what an engine's sub-tensor can look like.
TensorRef shifted(const TensorRef& t, std::size_t bytes) {
  TensorRef r = t;
  r.data = static_cast<std::byte*>(t.data) + bytes;
  return r;
}

TEST_F(LaunchPlanTest, GmmMmaRefusesMisalignedViewsBeforeAnyLaunch) {
  GmmCase g;
  const auto c = cfg(16, 64, 64, 1, 4, 4, 2);  // split-K: the fp32 partials are in the workspace
  const auto plan = gmm::cuda::plan(g.s, c, g.rows());
  std::vector<double> ws(gmm::cuda::workspace_bytes(g.s, c) / sizeof(double) + 2);
  const std::size_t wsb = gmm::cuda::workspace_bytes(g.s, c);
  auto run = [&](const RefMap& in, const RefMap& out, void* w) {
    gmm::cuda::run(g.s, c, in, out, w, wsb, nullptr, 0, plan.get());
  };
  auto refusal = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const RefMap in = refs(g.p.inputs), out = refs(g.out);
  RefMap bad = in;
  bad["x_sorted"] = shifted(in.at("x_sorted"), 8);  // 8-byte aligned is not enough for cp.async's 16
  EXPECT_NE(refusal([&] { run(bad, out, ws.data()); }).find("x_sorted is not 16-byte aligned"), std::string::npos);
  bad = in;
  bad["w13"] = shifted(in.at("w13"), 2);
  EXPECT_NE(refusal([&] { run(bad, out, ws.data()); }).find("w13 is not 16-byte aligned"), std::string::npos);
  bad = in;
  bad["offsets"] = shifted(in.at("offsets"), 2);
  EXPECT_NE(refusal([&] { run(bad, out, ws.data()); }).find("offsets is not 4-byte aligned"), std::string::npos);
  RefMap bad_out = out;
  bad_out["h"] = shifted(out.at("h"), 2);
  EXPECT_NE(refusal([&] { run(in, bad_out, ws.data()); }).find("h is not 4-byte aligned"), std::string::npos);
  // The tile map heads the workspace and is read 16 bytes at a time.
  EXPECT_NE(refusal([&] { run(in, out, reinterpret_cast<std::byte*>(ws.data()) + 8); }).find("workspace is not 16-byte aligned"),
            std::string::npos);
  EXPECT_TRUE(launches.empty()) << "a misaligned call reached the device";
  // Aligned: it launches the schedule kernel, the GEMM and the finalize.
  EXPECT_EQ(refusal([&] { run(in, out, ws.data()); }), "");
  EXPECT_EQ(launches.size(), 3u);
}

TEST_F(LaunchPlanTest, GmmWgmmaWorkspaceMustBe128ByteAligned) {
  GmmCase g;
  const gmm::wgmma::Config c{gmm::wgmma::entries().front().shape};
  const std::size_t wsb = gmm::wgmma::workspace_bytes(g.s, c);
  std::vector<std::byte> ws(wsb + 256);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(ws.data()) + 127) / 128 * 128);
  try {
    gmm::wgmma::run(g.s, c, refs(g.p.inputs), refs(g.out), base + 16, wsb, nullptr);
    ADD_FAILURE() << "a 16-byte aligned workspace was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the workspace is not 128-byte aligned"), std::string::npos) << e.what();
  }
  EXPECT_EQ(queries(), 0);
  EXPECT_TRUE(launches.empty());
}

TEST_F(LaunchPlanTest, KernelOptionsDeviceMustBeTheCurrentOne) {
  EXPECT_NO_THROW(require_current_device(0, "moe::Kernel(\"gmm\")"));
  current_device = 1;
  try {
    require_current_device(0, "moe::Kernel(\"gmm\")");
    ADD_FAILURE() << "ran on device 1 with configs for device 0";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("made for CUDA device 0 but device 1 is current"), std::string::npos) << m;
    EXPECT_NE(m.find("cudaSetDevice(0)"), std::string::npos) << m;
  }
}

// A small bf16 layer on the cuda backend, resolved for a described H100 (the plan hook itself
// asks the current device), its inputs made on the host: the fake launch never reads them.
struct LayerCase {
  const FamilyDesc& f = family("moe-layer");
  const Params L = complete(f.problem_params,
                            Params{{"tokens", std::int64_t{12}}, {"dtype", std::string("bf16")},
                                   {"experts", std::int64_t{8}}, {"topk", std::int64_t{2}},
                                   {"hidden", std::int64_t{64}}, {"intermediate", std::int64_t{32}},
                                   {"align", std::int64_t{4}}},
                            "layer");
  const BackendImpl& b = f.need_backend(Backend::cuda);
  const tuner::Prepared p = testing::prepare_seeded(f, L);
  TensorMap out = allocate(p.output_specs);
  // The layer's own sizing resolves on the device: a generous host buffer instead.
  std::vector<std::byte> ws = std::vector<std::byte>(std::size_t{64} << 20);

  static Params config(std::int64_t pdl) {
    Params c;
    for (const char* k : {"router", "dispatch", "gmm_up", "gmm_down", "combine"}) c.set(k, std::string("auto"));
    c.set("pdl", pdl);
    return c;
  }
  RefMap in() const { return refs(const_cast<TensorMap&>(p.inputs)); }
  std::shared_ptr<const LayerPlan> plan(const Params& c) const {
    auto resolved =
        std::make_shared<const ResolvedLayer>(resolve_layer(Backend::cuda, L, c, testing::described_h100(), {}, true));
    return plan_layer(Backend::cuda, L, resolved, in());
  }
  void run(const Params& c, const LaunchPlan* planned) {
    LaunchContext ctx;
    ctx.workspace = ws.data();
    ctx.workspace_bytes = ws.size();
    ctx.plan = planned;
    b.run(L, c, in(), refs(out), ctx);
  }
};

TEST_F(LaunchPlanTest, LayerPlannedOnceATimedCallOnlyLaunches) {
  LayerCase lc;
  ASSERT_TRUE(lc.b.plan) << "the layer has no plan hook";
  const Params config = LayerCase::config(1);
  const auto plan = lc.plan(config);
  ASSERT_EQ(plan->stages.size(), 5u);
  EXPECT_TRUE(plan->stages[2] && plan->stages[3]) << "the gmm stages are planned";
  EXPECT_GE(sm_calls, 1) << "gmm planning asks the SM count";
  lc.run(config, plan.get());  // the bench's warm-up: the first launch of each kernel
  const int after_warmup = queries();
  const std::size_t per_call = launches.size();
  EXPECT_GE(per_call, 5u);
  for (int i = 0; i < 3; ++i) lc.run(config, plan.get());
  EXPECT_EQ(queries(), after_warmup) << "a timed layer call queried the runtime";
  EXPECT_EQ(launches.size(), 4 * per_call);
}

// Every kernel of a layer call carries the programmatic-serialization attribute when the
// config's pdl is 1, none when it is 0, and none when the caller turned PDL off around the call.
TEST_F(LaunchPlanTest, LayerLaunchesCarryTheProgrammaticAttributeOnlyWhenPdlIsOn) {
  LayerCase lc;
  auto launched = [&](std::int64_t pdl, bool caller_on) {
    launches.clear();
    const Params c = LayerCase::config(pdl);
    const auto plan = lc.plan(c);
    const ProgrammaticLaunch scope(caller_on);
    lc.run(c, plan.get());
    std::size_t programmatic = 0;
    for (const Launch& l : launches) programmatic += l.programmatic ? 1 : 0;
    return std::make_pair(launches.size(), programmatic);
  };
  const auto on = launched(1, true);
  EXPECT_GE(on.first, 5u) << "router, dispatch, two gmm and combine launches at least";
  EXPECT_EQ(on.second, on.first) << "a launch of a PDL layer call went without the attribute";
  const auto off = launched(0, true);
  EXPECT_EQ(off.first, on.first);
  EXPECT_EQ(off.second, 0u) << "pdl=0 still launched programmatically";
  EXPECT_EQ(launched(1, false).second, 0u) << "the caller's PDL off did not reach the layer";
  EXPECT_TRUE(programmatic_launch()) << "the scope did not restore the default";
}

TEST_F(LaunchPlanTest, AProgrammaticLaunchScopeHoldsForItsThreadOnly) {
  int a = 1;
  const void* f = &a;
  launch_kernel_args(f, 1, 32, 0, nullptr, a);
  {
    const ProgrammaticLaunch off(false);
    launch_kernel_args(f, 2, 32, 0, nullptr, a);
    bool other_thread = false;
    std::thread([&] { other_thread = programmatic_launch(); }).join();
    EXPECT_TRUE(other_thread) << "a scope on one thread turned PDL off on another";
  }
  launch_kernel_args(f, 3, 32, 0, nullptr, a);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_TRUE(launches[0].programmatic);
  EXPECT_FALSE(launches[1].programmatic);
  EXPECT_TRUE(launches[2].programmatic) << "the scope did not restore PDL when it ended";
}

TEST(CuptiVerdict, FewerKernelsOrDroppedRecordsFallBackToEvents) {
  EXPECT_TRUE(tuner::judge_cupti(4, 4, 0).ok);
  EXPECT_TRUE(tuner::judge_cupti(1, 0, 0).ok);  // launches unknown: one kernel seen is enough
  const auto short_by_one = tuner::judge_cupti(3, 4, 0);
  EXPECT_FALSE(short_by_one.ok);
  EXPECT_NE(short_by_one.why.find("3 of the 4 kernels"), std::string::npos) << short_by_one.why;
  const auto dropped = tuner::judge_cupti(4, 4, 7);
  EXPECT_FALSE(dropped.ok);
  EXPECT_NE(dropped.why.find("dropped 7"), std::string::npos) << dropped.why;
  EXPECT_FALSE(tuner::judge_cupti(0, 0, 0).ok);
}

}  // namespace
}  // namespace moe
