// Decode's down kernels (the 16-row bf16/f16 mma tiles and the fp8 tiles) given their tile map as
// "early_tile_map", as the layer's decode path gives it: written before the kernel's predecessor
// ran, so each CTA reads its first tile's entry and sends that tile's weights to L2 before its
// PDL wait. Under the emulator every prefetch is logged with its CTA and whether its thread had
// waited; the log must hold exactly each CTA's first tile's weight rows and K range, all ahead
// of the wait, and nothing when the map comes as plain "tile_map" (the predecessor's output).
// The output must not change. The expected ranges are worked out here from the problem's offsets
// and the split rule, not by the kernel's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/emu_backend.hpp"
#include "emu/ptx.hpp"
#include "gmm/emu.hpp"
#include "gmm/family.hpp"
#include "gmm/fp8_mma/fp8_mma_configs.hpp"
#include "gmm/spec.hpp"
#include "support/gmm_problems.hpp"
#include "support/mma_emulation.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using gmm::cuda::Config;
using gmm::cuda::TileShape;
using Ranges = std::vector<std::pair<std::uintptr_t, std::uintptr_t>>;  // [begin, end) byte ranges

// Sorted, touching ranges joined: a whole tile sent as one prefetch equals its rows sent apart.
Ranges merged(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges m;
  for (const auto& x : r) {
    if (!m.empty() && x.first <= m.back().second) m.back().second = std::max(m.back().second, x.second);
    else m.push_back(x);
  }
  return m;
}

// The tile map of block_m 16 over `offsets`, as the schedule kernel's layout defines it: one entry
// {expert, first row, end row, M-tiles} per 16-row tile of each expert's rows, expert -1 after.
Tensor map_of(const std::vector<std::int32_t>& offsets, std::int64_t rows) {
  const std::int64_t E = static_cast<std::int64_t>(offsets.size()) - 1;
  Tensor t(DType::i32, {static_cast<std::int64_t>(gmm_tile_map_bytes(rows, 16, E) / 4)});
  auto* m = t.data<std::int32_t>();
  std::vector<std::array<int, 3>> tiles;
  for (int e = 0; e < E; ++e)
    for (int r = offsets[e]; r < offsets[e + 1]; r += 16) tiles.push_back({e, r, offsets[e + 1]});
  const std::int64_t entries = t.numel() / 4 - 1;
  for (std::int64_t i = 0; i <= entries; ++i) {
    const bool live = i < static_cast<std::int64_t>(tiles.size());
    m[4 * i] = i == entries ? 0 : live ? tiles[i][0] : -1;
    m[4 * i + 1] = live ? tiles[i][1] : 0;
    m[4 * i + 2] = live ? tiles[i][2] : 0;
    m[4 * i + 3] = i == entries ? 0 : static_cast<int>(tiles.size());
  }
  return t;
}

struct Case {
  Params problem;
  std::vector<std::int32_t> offsets;
};

// What each CTA should send: tile t = its index (splits fastest, then N-tiles, then M-tiles); its
// expert's rows nt*bn.. (inside hidden), the K slices of split s: ceil(K/bk) slices shared out
// evenly, the first splits one more, the last slice cut at K.
std::map<long long, Ranges> expected(const Case& c, const Tensor& map, const Tensor& w2, int bn, int bk,
                                     int split, int elem) {
  const int D = static_cast<int>(c.problem.i("hidden")), K = static_cast<int>(c.problem.i("intermediate"));
  const int n_tiles = (D + bn - 1) / bn, slices = (K + bk - 1) / bk, per = slices / split, extra = slices % split;
  const auto* m = map.data<std::int32_t>();
  const int total = m[3];
  const auto base = reinterpret_cast<std::uintptr_t>(w2.raw());
  std::map<long long, Ranges> want;
  for (int t = 0; t < total * n_tiles * split; ++t) {
    const int s = t % split, nt = (t / split) % n_tiles, mg = t / split / n_tiles;
    const int e = m[4 * mg];
    const int first = s * per + std::min(s, extra), count = per + (s < extra ? 1 : 0);
    const std::uintptr_t k0 = static_cast<std::uintptr_t>(first) * bk * elem;
    const std::uintptr_t k1 = std::min<std::uintptr_t>(static_cast<std::uintptr_t>(first + count) * bk * elem,
                                                        static_cast<std::uintptr_t>(K) * elem);
    for (int r = nt * bn; r < std::min(D, nt * bn + bn); ++r) {
      const std::uintptr_t row = base + (static_cast<std::uintptr_t>(e) * D + r) * K * elem;
      want[t].push_back({row + k0, row + k1});
    }
  }
  for (auto& [t, r] : want) r = merged(r);
  return want;
}

// Runs one config with the map given as `input`; returns what failed (empty: nothing), and the
// log's ranges per CTA.
std::string run(const tuner::Prepared& p, const Config& c, const Tensor& map, const char* input, bool fp8,
                std::map<long long, Ranges>& sent) {
  const GmmSpec s = GmmSpec::parse(p.problem);
  RefMap in = refs(const_cast<TensorMap&>(p.inputs));
  Tensor own_map = map;
  in[input] = own_map.ref();
  TensorMap out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  const std::size_t ws_bytes = fp8 ? gmm::fp8_mma::workspace_bytes(s, c) : gmm::cuda::workspace_bytes(s, c);
  std::vector<std::byte> ws(ws_bytes, std::byte{0xFF});
  std::vector<simt::ptx::L2Prefetch> log;
  simt::ptx::l2_prefetch_log() = &log;
  std::string err;
  try {
    if (fp8) gmm::emu::run_fp8_mma(s, c, in, refs(out), ws.data(), ws.size());
    else gmm::emu::run_mma(s, c, in, refs(out), ws.data(), ws.size());
  } catch (const std::exception& e) {
    err = e.what();
  }
  simt::ptx::l2_prefetch_log() = nullptr;
  if (!err.empty()) return err;
  for (const auto& x : log) {
    if (x.after_wait) return "a prefetch after the wait";
    const auto b = reinterpret_cast<std::uintptr_t>(x.p);
    sent[x.block].push_back({b, b + x.bytes});
  }
  for (auto& [t, r] : sent) r = merged(r);
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : v.summary();
}

// `configs`: the configs to run, of the prepared problem.
template <class Configs>
void check_case(const Case& c, bool fp8, Configs&& configs_of) {
  TensorMap given;
  given["offsets"] = testing::i32_tensor(c.offsets);
  const auto p = testing::prep_gmm(c.problem, given, 23);
  const std::vector<Config> configs = configs_of(GmmSpec::parse(p.problem));
  const Tensor map = map_of(c.offsets, p.inputs.at("h").shape().at(0));
  int ran = 0;
  for (const Config& cf : configs) {
    const std::string what = c.problem.str() + " tile 16x" + std::to_string(cf.shape.bn) + " split " +
                             std::to_string(cf.split) + ": ";
    std::map<long long, Ranges> early, plain;
    EXPECT_EQ(run(p, cf, map, "early_tile_map", fp8, early), "") << what;
    EXPECT_EQ(early, expected(c, map, p.inputs.at("w2"), cf.shape.bn, cf.shape.bk, cf.split, fp8 ? 1 : 2)) << what;
    EXPECT_EQ(run(p, cf, map, "tile_map", fp8, plain), "") << what;
    EXPECT_TRUE(plain.empty()) << what << "the predecessor's own map is read only after the wait";
    ++ran;
  }
  EXPECT_GT(ran, 1);
}

TEST(GmmEarlyMapEmulation, DownSendsItsFirstTilesWeightsToL2BeforeTheWait) {
  // Experts without rows first, between and last; segments of 1, 17 and 3 rows (two M-tiles for
  // the 17); hidden 192 is not a multiple of the 128- and 256-wide tiles; K = 160 leaves a partial
  // 32-element slice, cut unevenly by splits 2 and 3.
  const Case c{testing::gmm_problem(7, 6, 3, 0, 192, 160, 1, "down"), {0, 0, 1, 18, 18, 21, 21}};
  check_case(c, false, [](const GmmSpec&) {
    std::vector<Config> configs;
    for (const TileShape& t : testing::mma_shapes())
      if (t.bm == 16)
        for (int split : {1, 2, 3}) configs.push_back({t, split, 1});
    return configs;
  });
}

TEST(GmmEarlyMapEmulation, Fp8DownLikewiseOverEveryTileAndSplit) {
  // fp8 down: K = 384 is three 128-wide blocks (split 2 gives the first split two of them).
  const Case c{testing::fp8_gmm_problem(7, 6, 3, 384, 384, 1, "down"), {0, 0, 1, 18, 18, 21, 21}};
  check_case(c, true, [](const GmmSpec& s) {
    std::vector<Config> configs;
    for (const TileShape& t : gmm::fp8_mma::tiles())
      if (t.bm == 16)
        for (int split : {1, 2, 3}) {
          const Config cf{t, split, 1};
          if (gmm::fp8_mma::invalid_reason(s, cf, emu_device_info()).empty()) configs.push_back(cf);
        }
    return configs;
  });
}

}  // namespace
}  // namespace moe
