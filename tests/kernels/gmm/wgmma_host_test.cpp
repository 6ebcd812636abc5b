// The wgmma path's host side without a GPU: the plan cache's cap, the CUDA error kept in a
// CUTLASS failure's text, and the 2x1 cluster's count asked of cudaOccupancyMaxActiveClusters
// (through the replaceable runtime of moe/cuda_launch_api.hpp).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/bounded_cache.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "gmm/wgmma/wgmma_failure.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe {
namespace {

TEST(WgmmaHost, PlanCacheHoldsAtMostItsCapAndKeepsDroppedPlansAlive) {
  BoundedCache<const void*, int> cache(gmm::wgmma::kMaxPlans);
  std::vector<char> workspaces(3 * gmm::wgmma::kMaxPlans);
  int made = 0;
  std::shared_ptr<const int> first;
  for (std::size_t i = 0; i < workspaces.size(); ++i) {
    auto p = cache.get(&workspaces[i], [&] { return std::make_shared<const int>(++made); });
    if (i == 0) first = p;
    ASSERT_LE(cache.size(), gmm::wgmma::kMaxPlans) << "after " << i + 1 << " workspaces";
  }
  EXPECT_EQ(made, static_cast<int>(workspaces.size()));
  EXPECT_EQ(*first, 1) << "a plan dropped from the cache stays alive where it is held";
  // A key that is present is found, not made again.
  const void* last = &workspaces.back();
  EXPECT_EQ(*cache.get(last, [&] { return std::make_shared<const int>(++made); }), static_cast<int>(workspaces.size()));
  EXPECT_EQ(made, static_cast<int>(workspaces.size()));
}

// A fake runtime for the failure text: each query answers what the test sets.
cudaError_t peeked = cudaSuccess, attr_error = cudaSuccess, stream_error = cudaSuccess;
int max_dynamic_smem = 0, cleared = 0;
const gmm::wgmma::FailureQueries kFakeQueries{
    [] { return peeked; },
    [] { return ++cleared, cudaSuccess; },
    [](cudaFuncAttributes* a, const void*) {
      a->maxDynamicSharedSizeBytes = max_dynamic_smem;
      return attr_error;
    },
    [](void*) { return stream_error; },
};

std::string explain(std::size_t smem = 1000) {
  static int kernel;
  return gmm::wgmma::explain_cutlass_failure("Error Internal", &kernel, smem, nullptr, true, kFakeQueries);
}

TEST(WgmmaHost, LaunchFailureTextKeepsTheCudaError) {
  peeked = cudaErrorLaunchOutOfResources, attr_error = stream_error = cudaSuccess, max_dynamic_smem = 1 << 20;
  std::string t = explain();
  EXPECT_EQ(t.rfind("Error Internal (cudaErrorLaunchOutOfResources", 0), 0u) << t;

  peeked = cudaSuccess, attr_error = cudaErrorInvalidDeviceFunction, cleared = 0;
  t = explain();
  EXPECT_NE(t.find("cudaFuncGetAttributes: cudaErrorInvalidDeviceFunction"), std::string::npos) << t;
  EXPECT_EQ(cleared, 1) << "the query's own error is cleared";

  attr_error = cudaSuccess, max_dynamic_smem = 48 * 1024;
  t = explain(200 * 1024);
  EXPECT_NE(t.find("may use 49152 bytes of shared memory, needs 204800"), std::string::npos) << t;

  max_dynamic_smem = 1 << 20, stream_error = cudaErrorIllegalAddress;
  t = explain();
  EXPECT_NE(t.find("the stream reports cudaErrorIllegalAddress"), std::string::npos) << t;
  stream_error = cudaErrorNotReady;
  EXPECT_EQ(explain(), "Error Internal") << "a busy stream is not a failure";
}

struct ClusterQuery {
  const void* func;
  int x, y, threads;
  std::size_t smem;
};
std::vector<ClusterQuery> cluster_queries;
int clusters_fit = 0, smem_opt_ins = 0;
const CudaRuntimeCalls kClusterFake{
    [] { return 0; },
    [](int) { return 132; },
    [](const void*, std::size_t) { ++smem_opt_ins; },
    [](const void*, int, std::size_t) { return 1; },
    [](const void*, unsigned, unsigned, std::size_t, void*, void**) {},
    [](const void* f, int x, int y, int threads, std::size_t smem) {
      cluster_queries.push_back({f, x, y, threads, smem});
      return clusters_fit;
    },
};

class WgmmaClusters : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_queries.clear();
    smem_opt_ins = 0;
    set_cuda_runtime_calls_for_testing(&kClusterFake);
  }
  void TearDown() override { set_cuda_runtime_calls_for_testing(nullptr); }
  static const gmm::wgmma::Entry& two_by_one() { return clustered(2, 1); }
  static const gmm::wgmma::Entry& clustered(int m, int n) {
    for (const auto& e : gmm::wgmma::entries())
      if (e.shape.cluster_m == m && e.shape.cluster_n == n && e.bf16) return e;
    throw Error("no bf16 " + std::to_string(m) + "x" + std::to_string(n) + " cluster entry is built");
  }
  static gmm::wgmma::PlanArgs args() {
    static std::vector<char> arrays(1 << 16);
    gmm::wgmma::PlanArgs a;
    a.experts = 8, a.n = 512, a.k = 256, a.sm_count = 132, a.device = 0;
    // Never read on the host: CUTLASS's host side only stores the device arrays' addresses.
    void* at = arrays.data();
    a.g.problems = static_cast<int*>(at);
    a.g.a = a.g.b = static_cast<const void**>(at);
    a.g.d = static_cast<void**>(at);
    a.g.row_weight = static_cast<const float**>(at);
    a.g.lda = a.g.ldb = a.g.ldd = static_cast<long long*>(at);
    a.workspace = arrays.data();
    return a;
  }
};

// The plan asks the runtime how many 2x1 clusters fit (CUTLASS would assume every SM pair can
// host one), before CUTLASS's initialize (which needs a GPU and fails here).
TEST_F(WgmmaClusters, TwoByOneClusterCountComesFromTheOccupancyQuery) {
  const gmm::wgmma::Entry& e = two_by_one();
  clusters_fit = 66;
  try {
    e.bf16(args());
  } catch (const Error&) {
  }
  ASSERT_EQ(cluster_queries.size(), 1u);
  const ClusterQuery& q = cluster_queries[0];
  EXPECT_EQ(q.x, e.shape.cluster_m);
  EXPECT_EQ(q.y, e.shape.cluster_n);
  EXPECT_EQ(q.x * q.y, 2);
  EXPECT_GT(q.threads, 0);
  EXPECT_EQ(q.smem, e.smem);
  EXPECT_EQ(smem_opt_ins, 1) << "the kernel opts into its shared memory before the query";

  // Asked once per kernel shape: a second plan finds the count cached.
  try {
    e.bf16(args());
  } catch (const Error&) {
  }
  EXPECT_EQ(cluster_queries.size(), 1u);
}

TEST_F(WgmmaClusters, OneByTwoClusterAsksForItsOwnShape) {
  // The N-cluster tile (two CTAs sharing an activation tile) asks for a 1x2 cluster, not 2x1.
  const gmm::wgmma::Entry& e = clustered(1, 2);
  clusters_fit = 66;
  try {
    e.bf16(args());
  } catch (const Error&) {
  }
  ASSERT_EQ(cluster_queries.size(), 1u);
  EXPECT_EQ(cluster_queries[0].x, 1);
  EXPECT_EQ(cluster_queries[0].y, 2);
  EXPECT_EQ(cluster_queries[0].smem, e.smem);
  const Params c = gmm::wgmma::config_params(gmm::wgmma::Config{e.shape});
  EXPECT_EQ(c.i("cluster_n"), 2);
  EXPECT_EQ(gmm::wgmma::parse_config(c).shape, e.shape);
}

TEST_F(WgmmaClusters, NoClusterFitsIsACleanError) {
  clusters_fit = 0;
  try {
    two_by_one().bf16(args());
    FAIL() << "a plan with no resident cluster";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("no cluster of this kernel fits the device"), std::string::npos) << err.what();
  }
  ASSERT_EQ(cluster_queries.size(), 1u);
}

}  // namespace
}  // namespace moe
