// Launch plans without a GPU: the CUDA runtime is replaced by a counting fake (the seam in
// moe/cuda_launch_api.hpp), so these tests see every query and launch the host code makes.
#include <gtest/gtest.h>

#include <vector>

#include "gmm/cuda_configs.hpp"
#include "support/gmm_problems.hpp"
#include "moe/cuda_launch_api.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/cupti_timer.hpp"

namespace moe {
namespace {

struct Launch {
  const void* func;
  unsigned grid, block;
  std::size_t smem;
};
std::vector<Launch> launches;
int sm_calls = 0, smem_calls = 0, occ_calls = 0;

const CudaRuntimeCalls kFake{
    [] { return 0; },
    [](int) { return ++sm_calls, 132; },
    [](const void*, std::size_t) { ++smem_calls; },
    [](const void*, int, std::size_t) { return ++occ_calls, 2; },
    [](const void* f, unsigned g, unsigned b, std::size_t s, void*, void**) { launches.push_back({f, g, b, s}); },
};

class LaunchPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    launches.clear();
    sm_calls = smem_calls = occ_calls = 0;
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
  ASSERT_EQ(plan->kernels, 1);
  ASSERT_EQ(plan->launches.size(), 1u);
  const int before = queries();
  for (int i = 0; i < 5; ++i)
    gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), nullptr, 0, nullptr, 0, plan.get());
  EXPECT_EQ(queries(), before) << "a planned call queried the runtime";
  ASSERT_EQ(launches.size(), 5u);
  // The persistent grid: at most the resident CTAs (2 per SM x 132 SMs), at least one tile's worth.
  EXPECT_EQ(launches[0].grid, plan->launches[0].grid);
  EXPECT_LE(launches[0].grid, 264u);
  EXPECT_GE(launches[0].grid, 1u);
  EXPECT_EQ(launches[0].block, 128u);
  EXPECT_EQ(launches[0].smem, gmm::cuda::smem_bytes(c.shape, g.s.e_local()));
}

TEST_F(LaunchPlanTest, GmmSplitKLaunchesTheFinalizeToo) {
  GmmCase g;
  const auto c = cfg(16, 64, 64, 1, 4, 4, 2);
  const auto plan = gmm::cuda::plan(g.s, c, g.rows());
  ASSERT_EQ(plan->kernels, 2);
  std::vector<float> ws(gmm::cuda::workspace_bytes(g.s, c) / sizeof(float));
  gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), ws.data(), ws.size() * sizeof(float), nullptr, 0, plan.get());
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_NE(launches[0].func, launches[1].func);
  EXPECT_EQ(launches[1].block, 256u);
}

TEST_F(LaunchPlanTest, GmmUnplannedCallsQueryOnceThenHitTheCache) {
  GmmCase g;
  const auto c = cfg(64, 128, 64, 2, 2, 3);
  gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), nullptr, 0, nullptr);
  const int first = queries();
  EXPECT_GE(first, 2);
  for (int i = 0; i < 3; ++i) gmm::cuda::run(g.s, c, refs(g.p.inputs), refs(g.out), nullptr, 0, nullptr);
  EXPECT_EQ(queries(), first);
  EXPECT_EQ(launches.size(), 4u);
}

TEST_F(LaunchPlanTest, GmmBackendPlanIsWhatRunUses) {
  GmmCase g;
  const BackendImpl& b = family("gmm").need_backend(Backend::cuda);
  ASSERT_TRUE(b.plan);
  const Params config = gmm::cuda::config_params(cfg(16, 64, 64, 1, 4, 4, 4));
  const auto plan = b.plan(g.p.problem, config, refs(g.p.inputs));
  EXPECT_EQ(plan->kernels, 2);
  std::vector<std::byte> ws(b.workspace_bytes(g.p.problem, config));
  LaunchContext ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  ctx.plan = plan.get();
  const int before = queries();
  const std::uint64_t launched = kernel_launches();
  b.run(g.p.problem, config, refs(g.p.inputs), refs(g.out), ctx);
  EXPECT_EQ(queries(), before);
  EXPECT_EQ(kernel_launches() - launched, 2u);
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
