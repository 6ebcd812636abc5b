// The cuda gmm backend's kernel choice (kernel=mma|wgmma) as host logic: which wgmma configs a
// problem's space offers on a described H100, why the others are invalid, and the workspace
// each needs. No GPU and no CUTLASS here: only the plain descriptions in wgmma_configs.hpp.
#include <gtest/gtest.h>

#include <set>

#include "support/described_devices.hpp"
#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "support/gmm_problems.hpp"

namespace moe {
namespace {

using testing::described_h100;
using testing::gmm_preset;
using testing::gmm_problem;

const BackendImpl& cu() { return gmm_family().need_backend(Backend::cuda); }

Params problem(std::int64_t T, const char* stage = "up", const char* dt = "bf16", std::int64_t D = 2048,
               std::int64_t I = 768) {
  return complete(gmm_family().problem_params, gmm_problem(T, 128, 8, 0, D, I, 16, stage, dt), "gmm");
}

// The shapes built for bf16 (the fp8 ones are tests/kernels/gmm/wgmma_fp8_test.cpp's), and
// those of them whose tiles are 64 rows or more (not the swapped-operand one).
std::size_t bf16_entries(bool with_swapped = true) {
  std::size_t n = 0;
  for (const auto& e : gmm::wgmma::entries()) n += e.bf16 != nullptr && (with_swapped || !e.shape.swapped());
  return n;
}

std::vector<Params> wgmma_in(const std::vector<Params>& space) {
  std::vector<Params> v;
  for (auto& c : space)
    if (gmm::wgmma::selected(c)) v.push_back(c);
  return v;
}

Params wg(int bm, int bn, int cluster_m = 1, const char* schedule = "cooperative") {
  return complete(cu().config_params,
                  Params{{"kernel", std::string("wgmma")}, {"block_m", std::int64_t{bm}}, {"block_n", std::int64_t{bn}},
                         {"block_k", std::int64_t{64}}, {"cluster_m", std::int64_t{cluster_m}},
                         {"schedule", std::string(schedule)}},
                  "config");
}

TEST(WgmmaSpace, TheKernelChoiceIsAConfigParameter) {
  std::set<std::string> names;
  for (auto& p : cu().config_params) names.insert(p.name);
  for (const char* n : {"kernel", "cluster_m", "schedule", "block_m", "split_k"}) EXPECT_TRUE(names.count(n)) << n;
  // The default stays the mma kernel (valid on every device the backend runs on).
  const Params d = cu().default_config(problem(16384), described_h100());
  EXPECT_EQ(d.s("kernel"), "mma");
}

TEST(WgmmaSpace, PrefillOffersEveryBuiltShapeDecodeNone) {
  const auto dev = described_h100();
  const auto full = wgmma_in(cu().space(problem(16384), dev, true));
  ASSERT_EQ(full.size(), bf16_entries());
  std::set<std::string> keys;
  for (auto& c : full) {
    EXPECT_EQ(cu().invalid_reason(problem(16384), c, dev), "") << c.str();
    keys.insert(c.str());
    // Canonical: the mma-only parameters at their defaults.
    EXPECT_EQ(c.i("split_k"), 1);
    EXPECT_EQ(c.i("stages"), 3);
  }
  EXPECT_EQ(keys.size(), full.size());
  // Prefill's curated space: every tile but the swapped-operand one (32 token rows a tile).
  const auto curated = wgmma_in(cu().space(problem(16384), dev, false));
  EXPECT_EQ(curated.size(), bf16_entries(false));
  for (auto& c : curated) EXPECT_GE(c.i("block_m"), 64) << c.str();
  // Decode: a 64-row tile for a row or two per expert is left to the full space.
  EXPECT_TRUE(wgmma_in(cu().space(problem(1), dev, false)).empty());
  EXPECT_EQ(wgmma_in(cu().space(problem(1), dev, true)).size(), full.size());
  // f16 is left to the mma kernel (each CUTLASS instantiation costs a minute of build).
  EXPECT_TRUE(wgmma_in(cu().space(problem(16384, "down", "f16"), dev, true)).empty());
}

TEST(WgmmaSpace, InvalidConfigsAreExplained) {
  const auto dev = described_h100();
  const Params pr = problem(4096);
  EXPECT_EQ(cu().invalid_reason(pr, wg(128, 128), dev), "");
  // Not built.
  EXPECT_NE(cu().invalid_reason(pr, wg(128, 64), dev).find("built:"), std::string::npos);
  EXPECT_NE(cu().invalid_reason(pr, wg(128, 128, 1, "pingpong"), dev).find("built:"), std::string::npos);
  EXPECT_NE(cu().invalid_reason(problem(4096, "up", "f16"), wg(128, 128), dev).find("no f16 wgmma kernel"),
            std::string::npos);
  // TMA rows: K and N multiples of 8.
  EXPECT_NE(cu().invalid_reason(problem(4096, "up", "bf16", 2044, 768), wg(128, 128), dev).find("multiples of 8"),
            std::string::npos);
  // Another architecture: Ampere and Blackwell have no sm_90a wgmma.
  for (int major : {8, 10}) {
    DeviceInfo other = dev;
    other.cc_major = major;
    other.name = "other";
    EXPECT_NE(cu().invalid_reason(pr, wg(128, 128), other).find("sm_90"), std::string::npos) << major;
    EXPECT_TRUE(wgmma_in(cu().space(pr, other, true)).empty()) << major;
  }
  // Shared memory that does not fit.
  DeviceInfo small = dev;
  small.smem_optin = 100 * 1024;
  EXPECT_NE(cu().invalid_reason(pr, wg(128, 256), small).find("shared memory"), std::string::npos);
  // A parameter of the other kernel, set away from its default.
  Params mixed = wg(128, 128);
  mixed.set("split_k", std::int64_t{2});
  EXPECT_NE(cu().invalid_reason(pr, mixed, dev).find("split_k is a kernel=mma parameter"), std::string::npos);
  Params mma = cu().default_config(pr, dev);
  mma.set("cluster_m", std::int64_t{2});
  EXPECT_NE(cu().invalid_reason(pr, mma, dev).find("cluster_m is a kernel=wgmma parameter"), std::string::npos);
}

TEST(WgmmaSpace, WorkspaceHoldsGateUpRowsForUpOnly) {
  const Params up = problem(4096, "up"), down = problem(4096, "down");
  const GmmSpec su = GmmSpec::parse(up);
  const std::size_t gu = static_cast<std::size_t>(su.max_rows()) * su.n_w() * 2;
  for (auto& e : gmm::wgmma::entries()) {
    EXPECT_GE(e.smem, 64u * 1024) << gmm::wgmma::shape_str(e.shape);
    EXPECT_LE(e.smem, described_h100().smem_optin) << gmm::wgmma::shape_str(e.shape);
    const Params c = gmm::wgmma::config_params(gmm::wgmma::Config{e.shape});
    EXPECT_GE(cu().workspace_bytes(up, c), gu);
    EXPECT_LT(cu().workspace_bytes(down, c), gu / 4);
    EXPECT_GT(cu().workspace_bytes(down, c), 0u);
  }
}

TEST(WgmmaSpace, PresetsPrefillOfferWgmmaWithExpertParallelism) {
  const auto dev = described_h100();
  for (const char* name : {"qwen3-30b-a3b", "deepseek-v3"})
    for (const char* stage : {"up", "down"}) {
      Params pr = gmm_preset(name);
      pr.set("tokens", std::int64_t{8192});
      pr.set("stage", std::string(stage));
      const std::int64_t E = pr.i("experts");
      pr.set("expert_begin", std::int64_t{0});
      pr.set("expert_end", E / 8);
      pr = complete(gmm_family().problem_params, pr, "gmm");
      EXPECT_EQ(wgmma_in(cu().space(pr, dev, false)).size(), bf16_entries(false)) << pr.str();
    }
}

TEST(WgmmaSpace, ExpertsOfAFewDozenRowsAreOfferedTheSwappedOperandTile) {
  // 128 experts, top-8, align 16: T=512 is 32 rows an expert (47 with padding). The curated
  // space offers the 32-row (swapped) tile and the 64-row one, not the 128-row ones; at T=64
  // (4 rows, 19 padded) none; at T=1024 (79 padded) the swapped one still, at T=4096 no more.
  const auto dev = described_h100();
  auto rows_of = [&](std::int64_t T) {
    std::set<std::int64_t> v;
    for (auto& c : wgmma_in(cu().space(problem(T), dev, false))) v.insert(c.i("block_m"));
    return v;
  };
  EXPECT_EQ(rows_of(512), (std::set<std::int64_t>{32, 64}));
  EXPECT_TRUE(rows_of(64).empty());
  EXPECT_EQ(rows_of(1024).count(32), 1u);
  EXPECT_EQ(rows_of(4096).count(32), 0u);
  // What it is: bf16 only (f16 and fp8 name what is built), described as swapped.
  Params sw = wg(32, 128);
  sw.set("block_k", std::int64_t{128});
  EXPECT_EQ(cu().invalid_reason(problem(512), sw, dev), "");
  EXPECT_NE(cu().invalid_reason(problem(512, "up", "f16"), sw, dev).find("no f16 wgmma kernel"), std::string::npos);
  const gmm::wgmma::Config c = gmm::wgmma::parse_config(sw);
  EXPECT_TRUE(c.shape.swapped());
  EXPECT_EQ(gmm::wgmma::shape_str(c.shape), "32x128x128 cooperative cluster 1x1 swapped");
}

}  // namespace
}  // namespace moe
