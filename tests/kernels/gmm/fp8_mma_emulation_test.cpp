// The fp8 decode kernel (kernels/gmm/fp8_mma/fp8_mma_kernel.cuh) on the cpu under the simt emulator, by
// the emu backend's path, against DESIGN.md 1.6's reference: every built tile, both stages, fp32
// and ue8m0 scales, fused and second-pass up, split-K down with uneven K blocks, persistent CTAs
// walking several tiles. The inputs hold amax-0 groups, groups past 448 before scaling, experts
// without rows, padding rows and segments that end inside an M tile; planted NaN and inf in the
// activations must come out exactly where the reference has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "common/e4m3.hpp"
#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/family.hpp"
#include "gmm/fp8_mma/fp8_mma_configs.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using gmm::cuda::Config;
using gmm::cuda::TileShape;
using testing::fp8_gmm_problem;
using testing::i32_tensor;

tuner::Prepared prep(const Params& pr, TensorMap given = {}, std::uint64_t seed = 1) {
  InputOptions o;
  o.seed = seed;
  return tuner::prepare(gmm_family(), pr, o, std::move(given));
}

// Empty when the emulated config's output, on poisoned buffers, passes the family's validation.
std::string check(const tuner::Prepared& p, const Config& c, long long max_ctas) {
  const GmmSpec s = GmmSpec::parse(p.problem);
  const std::string what = std::string(s.down ? "down" : "up") + (s.ue8m0 ? " ue8m0" : "") + " tile " +
                           std::to_string(c.shape.bm) + "x" + std::to_string(c.shape.bn) + " split " +
                           std::to_string(c.split) + " ctas<=" + std::to_string(max_ctas) + ": ";
  TensorMap out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  std::vector<std::byte> ws(gmm::fp8_mma::workspace_bytes(s, c), std::byte{0xFF});  // NaN until written
  try {
    gmm::emu::run_fp8_mma(s, c, refs(const_cast<TensorMap&>(p.inputs)), refs(out), ws.data(), ws.size(), max_ctas);
  } catch (const EmuFault& e) {
    return what + e.what() + "\n";
  }
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : what + v.summary() + "\n";
}

TEST(GmmFp8MmaEmulation, EveryBuiltShapeIsEmulated) {
  const auto built = gmm::fp8_mma::tiles(), emulated = gmm::emu::emulated_fp8_tiles();
  ASSERT_EQ(built.size(), emulated.size());
  for (std::size_t i = 0; i < built.size(); ++i) EXPECT_TRUE(built[i] == emulated[i]) << i;
}

TEST(GmmFp8MmaEmulation, EveryConfigBothStagesAndScaleFormats) {
  // 12 tokens over 8 experts, align 16: experts without rows, padding rows; D = 384 gives up
  // three K blocks, I = 256 gives down two and up one fused h group per 256-wide tile.
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"}) {
      const auto p = prep(fp8_gmm_problem(12, 8, 2, 384, 256, 16, stage, fmt), {}, 7);
      const GmmSpec s = GmmSpec::parse(p.problem);
      const auto space = gmm::fp8_mma::space(s, emu_device_info(), true);
      // Up: the two fused tiles unsplit, the two unfused ones at split_k 1 and 2 (K=384 is three
      // blocks); down: every tile at 1 and 2 (K=256, two blocks).
      ASSERT_EQ(space.size(), std::string(stage) == "up" ? 6u : 8u) << stage;
      std::string fails;
      for (const Config& c : space) fails += check(p, c, 3);
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

TEST(GmmFp8MmaEmulation, RaggedSegmentsAndKBlockBoundaries) {
  // align 1: segments of 0, 1, 17 and 33 rows end inside M tiles; up's K = 640 is five blocks,
  // down's 1152 nine, which splits of 2, 4 and 8 cut unevenly (the host gives the first splits
  // one block more; every split at least one). Split 8 exceeds up's blocks and is refused.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 1, 18, 51});
  for (const char* stage : {"up", "down"}) {
    const bool up = std::string(stage) == "up";
    const auto p = prep(fp8_gmm_problem(51, 4, 1, up ? 640 : 256, up ? 256 : 1152, 1, stage), given, 11);
    std::string fails;
    std::vector<int> ran;
    for (auto& t : gmm::fp8_mma::tiles())
      for (int split : {1, 2, 4, 8}) {
        const Config c{t, split, 1};
        if (!gmm::fp8_mma::invalid_reason(GmmSpec::parse(p.problem), c, emu_device_info()).empty()) continue;
        fails += check(p, c, split == 2 ? 1 : 1 << 20);
        ran.push_back(split);
      }
    EXPECT_TRUE(fails.empty()) << fails;
    for (int split : {1, 2, 4}) EXPECT_NE(std::count(ran.begin(), ran.end(), split), 0) << stage << " split " << split;
    EXPECT_EQ(std::count(ran.begin(), ran.end(), 8) != 0, !up) << stage;
  }
}

TEST(GmmFp8MmaEmulation, NanInfAndCodesAt448) {
  // Row 3: a NaN code; row 5: an infinite x_scale on its second K block (finite codes become
  // inf or NaN); row 9: every code of its first block +-448, as are weight codes of expert 1.
  for (const char* stage : {"up", "down"}) {
    const auto base = prep(fp8_gmm_problem(16, 2, 1, 256, 256, 8, stage), {}, 5);
    TensorMap in = base.inputs;
    const GmmSpec s = GmmSpec::parse(base.problem);
    const std::int64_t K = s.k_dim();
    auto* q = in.at(s.act_name()).data<std::uint8_t>();
    q[3 * K + 17] = fp8::kNaN;
    in.at(s.act_scale_name()).data<float>()[5 * s.k_groups() + 1] = INFINITY;
    for (std::int64_t k = 0; k < 128; ++k) q[9 * K + k] = k % 2 ? 0x7E : 0xFE;
    auto* w = in.at(s.weight_name()).data<std::uint8_t>();
    for (std::int64_t i = 0; i < 128; ++i) w[s.n_w() * K + i * K + i] = 0x7E;
    const auto p = prep(base.problem, in, 5);
    std::string fails;
    for (auto& c : gmm::fp8_mma::space(s, emu_device_info(), true)) fails += check(p, c, 1 << 20);
    EXPECT_TRUE(fails.empty()) << fails;
    // The planted values reach the outputs as NaN (not silently dropped).
    TensorMap out = allocate(p.output_specs);
    std::vector<std::byte> ws(gmm::fp8_mma::workspace_bytes(s, gmm::fp8_mma::default_config(s, emu_device_info())));
    gmm::emu::run_fp8_mma(s, gmm::fp8_mma::default_config(s, emu_device_info()), refs(const_cast<TensorMap&>(p.inputs)),
                          refs(out), ws.data(), ws.size());
    EXPECT_TRUE(std::isnan(out.at(s.out_name()).get(3 * s.n_out()))) << stage;
  }
}

}  // namespace
}  // namespace moe
