// The cuda backend's kernel source, run on the cpu by the emu backend's path: kernels/gmm/
// mma/cuda_kernel.cuh compiled against emulated device primitives (kernels/gmm/emu_primitives.hpp
// over emu/ptx.hpp: ldmatrix, mma.sync and cp.async with PTX's semantics) on the simt emulator
// (a CTA's threads as fibers in a random order). cp.async poisons its destination when issued
// and copies only when wait_group retires its group, so a pipeline that reads a stage too early,
// or overwrites one still in use, computes garbage here too.
// This checks the kernels' indexing, tile map, pipeline and epilogues where no GPU is at hand;
// tests/gpu/gmm_gpu_test.cpp checks the real thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>

#include "gmm/family.hpp"
#include "gmm/spec.hpp"
#include "moe/dtype.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "support/gmm_problems.hpp"
#include "support/mma_emulation.hpp"
#include "common/emu_backend.hpp"
#include "emu/ptx.hpp"
#include "emu/simt_emulator.hpp"
#include "gmm/emu.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using gmm::cuda::TileShape;
using testing::gmm_problem;

std::vector<TileShape> shapes() { return testing::mma_shapes(); }

std::string run_grid(int threads, std::size_t smem, long long grid, std::uint32_t seed,
                     const std::function<void()>& body) {
  try {
    simt::launch(grid, threads, smem, [&] {
      simt::ptx::cp_async_reset();
      body();
    }, seed);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

using testing::i32_tensor;

tuner::Prepared prep(const Params& pr, TensorMap given = {}, std::uint64_t seed = 1) {
  return testing::prep_gmm(pr, std::move(given), seed);
}
std::string check(const tuner::Prepared& p, const TileShape& k, int split, long long max_ctas, int group_m = 1) {
  return testing::check_mma(p, k, split, max_ctas, group_m);
}

TEST(GmmEmulation, EveryBuiltShapeIsEmulated) {
  const auto& built = gmm::cuda::tiles();
  ASSERT_EQ(built.size(), shapes().size());
  for (std::size_t i = 0; i < built.size(); ++i) EXPECT_TRUE(built[i].shape == shapes()[i]) << i;
}

TEST(GmmEmulation, EveryShapeBothStagesWithTails) {
  // D=72 and I=40: a partial K slice and partial N tiles; experts with 0, 1 and 36 rows.
  for (const char* stage : {"up", "down"}) {
    TensorMap given;
    given["offsets"] = i32_tensor({0, 0, 1, 1, 37});
    Params pr = gmm_problem(19, 4, 2, 0, 72, 40, 1, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, given);
    std::string fails;
    for (auto& k : shapes()) fails += check(p, k, 1, 1 << 20);
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, SplitKAndPersistentCtas) {
  // K = 160: three BK=64 slices (the last partial), five BK=32 ones; splits that divide them
  // unevenly, and grids of 1 and 3 CTAs walking every tile.
  for (const char* stage : {"up", "down"}) {
    Params pr = gmm_problem(24, 6, 2, 1, 160, 160, 4, stage);
    const auto p = prep(pr, {}, 3);
    std::string fails;
    for (std::size_t i : {0u, 3u, 9u}) {
      fails += check(p, shapes()[i], 2, 1);
      fails += check(p, shapes()[i], 3, 3);
      fails += check(p, shapes()[i], 1, 2);
    }
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, LongKTripsRemainderAndTail) {
  // The k-loop proper takes STAGES whole slices per trip and runs only once a split has
  // 2*STAGES-1 of them; the slices left over go round the stage ring with the partial one.
  // up, K = 808: 12 whole BK=64 slices (25 of BK=32) and a 40-element (8-element) tail;
  // down, K = 768: no partial slice. Every shape makes at least two trips and has a remainder.
  // Split-K 2 gives each split its own trips, the tail to the last split only.
  for (const char* stage : {"up", "down"}) {
    const bool up = std::string(stage) == "up";
    Params pr = gmm_problem(5, 2, 1, 0, up ? 808 : 24, up ? 24 : 768, 1, stage);
    if (!up) pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, {}, 13);
    std::string fails;
    for (auto& k : shapes()) fails += check(p, k, 1, 1 << 20);
    for (std::size_t i : {2u, 11u, 17u}) fails += check(p, shapes()[i], 2, 3);
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, GroupedTileOrder) {
  // Experts with several 32-row M-tiles (16-row tiles are decode's and walk them one at a time),
  // group sizes that do and do not divide the M-tile count (the last group short), with
  // split-K, on grids of 1, 5 and all CTAs: every tile exactly once. Split-K needs two K slices
  // of the shape's block_k=64: up's K is the hidden size (128), down's the intermediate (48), so
  // only up splits.
  const TileShape tall = shapes()[5];
  ASSERT_EQ(tall.bm, 32);
  ASSERT_EQ(tall.bk, 64);
  for (const char* stage : {"up", "down"}) {
    Params pr = gmm_problem(192, 4, 2, 0, 128, 48, 4, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, {}, 9);
    std::string fails;
    for (int group_m : gmm::cuda::kGroupM)
      for (long long ctas : {1LL, 5LL, 1LL << 20}) {
        fails += check(p, tall, 1, ctas, group_m);
        if (std::string(stage) == "up") fails += check(p, tall, 2, ctas, group_m);
      }
    fails += check(p, shapes()[8], 1, 3, 4);  // 64-row tiles: a group larger than some experts' tile count
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, ManyExpertsTileMapAndF16) {
  // 70 local experts (the warp scan gives each lane three), most empty; f16 on the shapes built for it.
  for (const char* stage : {"up", "down"})
    for (const char* dt : {"bf16", "f16"}) {
      Params pr = gmm_problem(5, 64, 4, 6, 64, 48, 8, stage, dt);
      const auto p = prep(pr, {}, 5);
      std::string fails;
      for (std::size_t i : {0u, 6u, 14u}) fails += check(p, shapes()[i], 1, 4);
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

TEST(GmmEmulation, DecodeTilesRaggedEmptyExpertsKTailsAndShortK) {
  // The 16-row tiles as decode runs them: each CTA reads its tile's expert from the tile map the
  // schedule kernel wrote, streams that expert's weights first, and multiplies the slices the
  // k-loop's whole trips leave in ring trips that zero-fill past K. Ragged experts (1, 17 and
  // 3 rows) between experts without rows (first, middle, last); K = 96 (three BK=32 slices, one
  // and a half of BK=64: qwen3-30b-a3b --tp 8 down's K), 40 (only a partial slice) and 232
  // (whole trips, a remainder and a tail); the 16x32 split-N tile among them. One CTA walking
  // every tile, and a grid of all.
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 1, 18, 18, 21, 21});
  std::string fails;
  for (int k : {96, 40, 232})
    for (const char* stage : {"up", "down"}) {
      const bool up = std::string(stage) == "up";
      Params pr = gmm_problem(7, 6, 3, 0, up ? k : 48, up ? 48 : k, 1, stage);
      if (!up) pr.set("routed_weight", std::int64_t{1});
      const auto p = prep(pr, given, 17 + k);
      for (auto& t : shapes())
        if (t.bm == 16)
          for (long long ctas : {1LL, 1LL << 20}) fails += check(p, t, 1, ctas);
    }
  EXPECT_TRUE(fails.empty()) << fails;
}

TEST(GmmEmulation, BrokenPipelineIsCaught) {
  // The emulation must be able to fail: shared memory read before its cp.async group retired
  // holds poison, and the data lands at wait_group. (Mutating the kernel's wait_group depth,
  // barriers, ldmatrix lanes, gate/up rows or split ranges turns the tests above red.)
  alignas(16) static unsigned char src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<int> seen(32, -1), landed(32, -1);
  ASSERT_EQ(run_grid(32, 1024, 1, 1, [&] {
              const int t = simt::thread();
              simt::ptx::cp_async16(static_cast<std::uint32_t>(t * 16), src, true);
              simt::ptx::cp_async_commit();
              seen[t] = simt::dynamic_smem()[t * 16];  // too early: still in flight
              simt::ptx::cp_async_wait(0);
              simt::sync_threads();
              landed[t] = simt::dynamic_smem()[t * 16];
            }),
            "");
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(seen[t], 0xFF);
    EXPECT_EQ(landed[t], 1);
  }
}

TEST(GmmEmulation, FourByteCopiesLandWholeAndOnlyTheirBytes) {
  // The fp8 kernel's scales ride the pipeline as 4-byte cp.async copies: poison until the group
  // retires, then exactly 4 bytes; a misaligned one is a fault, not a silent read.
  alignas(16) static float scales[32];
  for (int i = 0; i < 32; ++i) scales[i] = 0.25f * static_cast<float>(i + 1);
  std::vector<float> seen(32, 0.0f), landed(32, 0.0f), next(32, 0.0f);
  ASSERT_EQ(run_grid(32, 256, 1, 1, [&] {
              const int t = simt::thread();
              std::memset(simt::dynamic_smem() + 128 + t * 4, 0x11, 4);
              simt::ptx::cp_async4(static_cast<std::uint32_t>(t * 4), scales + t);
              simt::ptx::cp_async_commit();
              std::memcpy(&seen[t], simt::dynamic_smem() + t * 4, 4);
              simt::ptx::cp_async_wait(0);
              simt::sync_threads();
              std::memcpy(&landed[t], simt::dynamic_smem() + t * 4, 4);
              std::memcpy(&next[t], simt::dynamic_smem() + 128 + t * 4, 4);
            }),
            "");
  float untouched;
  std::memset(&untouched, 0x11, 4);
  for (int t = 0; t < 32; ++t) {
    EXPECT_TRUE(std::isnan(seen[t])) << t;
    EXPECT_EQ(landed[t], scales[t]) << t;
    EXPECT_EQ(std::memcmp(&next[t], &untouched, 4), 0) << t;
  }
  EXPECT_NE(run_grid(1, 64, 1, 1, [&] { simt::ptx::cp_async4(2, scales); }), "");
}

TEST(GmmEmulation, EveryConfigOfTheSpaceThroughTheEmuBackend) {
  // What `moebench sweep gmm --backend emu` runs: each config of the cuda space for an H100,
  // through the harness. The wgmma configs run their setup and silu kernels and say why the
  // GEMM itself is not emulated.
  for (const char* stage : {"up", "down"}) {
    const auto p = prep(gmm_problem(64, 4, 2, 0, 64, 64, 8, stage), {}, 17);
    const BackendImpl& emu = gmm_family().need_backend(Backend::emu);
    int mma = 0, wg = 0;
    for (const Params& c : emu.space(p.problem, emu_device_info(), false)) {
      const tuner::Outcome o = tuner::run_emu(p, c);
      EXPECT_TRUE(o.validation.ok) << stage << " " << c.str() << ": " << o.validation.summary();
      EXPECT_TRUE(o.times_us.empty());
      const bool wgmma = c.s("kernel") == "wgmma";
      EXPECT_EQ(o.not_emulated.empty(), !wgmma) << c.str();
      ++(wgmma ? wg : mma);
    }
    EXPECT_GT(mma, 0);
    EXPECT_GT(wg, 0);
  }
}

// Offsets a caller made by hand, overlapping: {0, 100, 0, 100} over 100 rows asks for 14 M-tiles
// of 16 rows where the map holds 10. The schedule kernel must clamp the count it writes (a walk
// trusting it reads past the map, into the partials or past the workspace), stay inside the
// workspace, and leave a status the host reports as an Error naming the offsets.
TEST(GmmEmulation, OverlappingOffsetsStayInsideTheMapAndAreReported) {
  const Params pr = gmm_problem(50, 3, 2, 0, 64, 32, 1, "up");
  auto p = prep(pr, {{"offsets", i32_tensor({0, 50, 80, 100})}}, 5);
  std::memcpy(p.inputs.at("offsets").raw(), std::vector<std::int32_t>{0, 100, 0, 100}.data(), 16);
  const GmmSpec s = GmmSpec::parse(p.problem);
  const auto all = shapes();
  const auto k16 = std::find_if(all.begin(), all.end(), [](const TileShape& k) { return k.bm == 16; });
  ASSERT_NE(k16, all.end());
  const gmm::cuda::Config c{*k16, 1, 1};
  const std::size_t need = gmm::cuda::workspace_bytes(s, c);
  constexpr std::size_t kCanary = 4096;
  std::vector<std::byte> ws(need + kCanary, std::byte{0x5A});
  TensorMap out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  std::string err;
  try {
    gmm::emu::run_mma(s, c, refs(p.inputs), refs(out), ws.data(), need, 1 << 20);
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("gmm: the offsets decrease or leave [0, rows]"), std::string::npos) << err;
  EXPECT_NE(err.find("14 M-tiles where 10 fit"), std::string::npos) << err;
  const int map_tiles = (100 + 15) / 16 + 3;
  const auto* map = reinterpret_cast<const std::int32_t*>(ws.data());
  for (int i = 0; i < map_tiles; ++i) {
    EXPECT_LE(map[4 * i + 3], map_tiles) << "entry " << i << " claims more M-tiles than the map holds";
    EXPECT_GE(map[4 * i], 0) << "entry " << i << ": the clamped map is full";
  }
  for (std::size_t b = need; b < ws.size(); ++b) ASSERT_EQ(ws[b], std::byte{0x5A}) << "written past the workspace at " << b;
}

// The same offsets through the emu backend's own entry (and so the library's and Python's on
// host memory): refused before any kernel runs, naming the entry.
TEST(GmmEmulation, HostOffsetsAreCheckedBeforeTheKernelsRun) {
  const Params pr = gmm_problem(50, 3, 2, 0, 64, 32, 1, "up");
  auto p = prep(pr, {{"offsets", i32_tensor({0, 50, 80, 100})}}, 5);
  std::memcpy(p.inputs.at("offsets").raw(), std::vector<std::int32_t>{0, 100, 0, 100}.data(), 16);
  const BackendImpl& emu = gmm_family().need_backend(Backend::emu);
  TensorMap out = allocate(p.output_specs);
  const Params cfg = tuner::complete_config(gmm_family(), Backend::emu, p.problem, {}, emu_device_info());
  std::vector<std::byte> ws(emu.workspace_bytes ? emu.workspace_bytes(p.problem, cfg) : 0);
  LaunchContext ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  try {
    emu.run(p.problem, cfg, refs(p.inputs), refs(out), ctx);
    ADD_FAILURE() << "decreasing offsets were run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("offsets[2] = 0: pass dispatch's offsets"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe
