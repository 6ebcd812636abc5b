// The dispatch cuda kernels (kernels/dispatch/cuda_*_kernels.cuh) run on the cpu under the
// simt emulator: every aligner and gather instantiation against the host plan, bit for bit,
// with random thread orders, poisoned outputs and guard bands after every output. It checks
// the kernels' indexing, warp ranking, scans and padding where no GPU is at hand;
// tests/gpu/dispatch_combine_gpu_test.cpp checks the real thing.
#include "emu/simt_cuda.hpp"  // first: the kernel headers below compile against its CUDA names
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/emu_backend.hpp"
#include "common/rng.hpp"
#include "dispatch/cuda_align_kernels.cuh"
#include "dispatch/cuda_gather_kernels.cuh"
#include "dispatch/plan.hpp"
#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using namespace moe::dispatch_cuda;
namespace ak = moe::dispatch_cuda::align_kernels;
namespace gk = moe::dispatch_cuda::gather_kernels;

constexpr std::int32_t kPoison = 0x7f7f7f7f;
constexpr std::size_t kGuard = 64;  // ints after every output that no kernel may touch

// An int32 output poisoned, with a guard band after its n values.
struct Guarded {
  std::vector<std::int32_t> v;
  std::int64_t n;
  explicit Guarded(std::int64_t n_) : v(static_cast<std::size_t>(n_) + kGuard, kPoison), n(n_) {}
  std::int32_t* data() { return v.data(); }
  std::vector<std::int32_t> values() const { return {v.begin(), v.begin() + n}; }
  bool guard_intact() const {
    return std::all_of(v.begin() + n, v.end(), [](std::int32_t x) { return x == kPoison; });
  }
};

struct AlignCase {
  std::string name;
  std::vector<std::int32_t> ids;
  ExpertRange range;
  int shift = 0;  // ids placed this many ints past a 16-byte boundary
};

// Uniform ids over [0, E_total), optionally skewed onto a few experts, with `bad` ids out of
// range (negative and past E_total) sprinkled in.
AlignCase make_case(const std::string& name, std::int64_t slots, std::int64_t E_total, std::int64_t e0, std::int64_t e1,
                    std::int64_t A, bool skew, int bad, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  AlignCase c{name, std::vector<std::int32_t>(static_cast<std::size_t>(slots)), {E_total, e0, e1, A}};
  std::uniform_int_distribution<std::int32_t> any(0, static_cast<std::int32_t>(E_total - 1));
  for (auto& id : c.ids) id = skew && rng() % 4 ? static_cast<std::int32_t>(rng() % 3) : any(rng);
  for (int i = 0; i < bad && slots > 0; ++i)
    c.ids[rng() % static_cast<std::uint64_t>(slots)] =
        i % 2 ? -1 - static_cast<std::int32_t>(rng() % 5) : static_cast<std::int32_t>(E_total + rng() % 1000);
  return c;
}

struct AlignOut {
  std::vector<std::int32_t> offsets, src, dst;
  std::string error;
};

// The aligner launched as cuda_align.cu launches it, kernels emulated.
AlignOut run_aligner(const AlignCase& c, const std::string& aligner, int threads, int chunk, std::int64_t rows,
                     std::uint32_t seed) {
  const int local = static_cast<int>(c.range.e1 - c.range.e0);
  const std::int64_t slots = static_cast<std::int64_t>(c.ids.size());
  Guarded offsets(local + 1), src(rows), dst(slots);
  std::vector<std::int32_t> placed(static_cast<std::size_t>(slots + 4));
  const auto at = reinterpret_cast<std::uintptr_t>(placed.data());
  std::int32_t* ids = placed.data() + ((16 - at % 16) % 16 / 4 + c.shift) % 4;
  std::copy(c.ids.begin(), c.ids.end(), ids);
  const ak::Dev d{ids,
                  slots,
                  static_cast<int>(c.range.e0),
                  local,
                  static_cast<int>(c.range.E_total),
                  static_cast<int>(c.range.A),
                  offsets.data(),
                  src.data(),
                  dst.data(),
                  rows};
  AlignOut out;
  try {
    if (aligner == "single") {
      const std::size_t smem = single_smem_bytes(threads, local, slots);
      if (threads == 512)
        simt::launch(
            1, 512, smem, [&] { ak::align_single_kernel<512>(d); }, seed);
      else
        simt::launch(
            1, 1024, smem, [&] { ak::align_single_kernel<1024>(d); }, seed);
    } else {
      const long long ctas = (slots + chunk - 1) / chunk;
      Guarded hist(local * ctas);
      const int n = static_cast<int>(ctas);
      auto three = [&](auto threads_c) {
        constexpr int TH = decltype(threads_c)::value;
        if (n)
          simt::launch(
              n, TH, hist_smem_bytes(local, chunk), [&] { ak::align_hist_kernel<TH>(d, chunk, hist.data(), n); }, seed);
        simt::launch(
            1, kScanThreads, scan_smem_bytes(local), [&] { ak::align_scan_kernel<>(d, hist.data(), n); }, seed + 1);
        if (n)
          simt::launch(
              n, TH, scatter_smem_bytes(TH, local, chunk),
              [&] { ak::align_scatter_kernel<TH>(d, chunk, hist.data(), n); }, seed + 2);
      };
      if (threads == 128)
        three(std::integral_constant<int, 128>{});
      else
        three(std::integral_constant<int, 256>{});
      if (!hist.guard_intact()) out.error = "hist guard overwritten";
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  if (!offsets.guard_intact() || !src.guard_intact() || !dst.guard_intact()) out.error += " output guard overwritten";
  out.offsets = offsets.values();
  out.src = src.values();
  out.dst = dst.values();
  return out;
}

struct AlignerConfig {
  std::string aligner;
  int threads, chunk;
};

std::vector<AlignerConfig> every_aligner() {
  std::vector<AlignerConfig> v;
  for (int th : kSingleThreads) v.push_back({"single", th, 0});
  for (int th : kMultiThreads)
    for (int ch : kMultiChunks) v.push_back({"multi", th, ch});
  return v;
}

std::string check_aligners(const AlignCase& c) {
  const DispatchPlan want = plan_dispatch(c.ids.data(), static_cast<std::int64_t>(c.ids.size()), c.range);
  std::string fails;
  for (const AlignerConfig& a : every_aligner()) {
    if (a.aligner == "single" && static_cast<std::int64_t>(c.ids.size()) > kSingleMaxSlots) continue;
    for (std::uint32_t seed : {1u, 2u}) {
      const AlignOut got = run_aligner(c, a.aligner, a.threads, a.chunk, want.rows(), seed);
      const std::string what = c.name + " " + a.aligner + " threads=" + std::to_string(a.threads) +
                               " chunk=" + std::to_string(a.chunk) + " seed=" + std::to_string(seed) + ": ";
      if (!got.error.empty())
        fails += what + got.error + "\n";
      else if (got.offsets != want.offsets)
        fails += what + "offsets differ\n";
      else if (got.src != want.src)
        fails += what + "src differs\n";
      else if (got.dst != want.dst)
        fails += what + "dst differs\n";
    }
  }
  return fails;
}

TEST(DispatchEmulation, AlignersMatchThePlanBitForBit) {
  const std::vector<AlignCase> cases = {
      make_case("decode T=1 K=8 E=128 A=16", 8, 128, 0, 128, 16, false, 0, 1),
      make_case("T=37 K=9 (8+1 shared) E=65 A=4", 37 * 9, 65, 0, 65, 4, false, 0, 2),
      make_case("skewed T=300 K=8 E=64 A=64", 2400, 64, 0, 64, 64, true, 0, 3),
      make_case("expert range [16,48) of 64, bad ids", 700, 64, 16, 48, 8, false, 40, 4),
      make_case("E=384 A=1, 3 multi CTAs", 4800, 384, 0, 384, 1, false, 0, 5),
      make_case("several 8192-chunks, E=40 skewed", 17000, 40, 0, 40, 16, true, 9, 6),
      make_case("no slot local", 64, 32, 30, 32, 4, true, 0, 7),
  };
  for (const AlignCase& c : cases) EXPECT_EQ(check_aligners(c), "") << c.name;
}

TEST(DispatchEmulation, AlignersReadIdsAtAnyAlignment) {
  // The single-CTA aligner loads four ids at a time where they are 16-byte aligned and one at a
  // time elsewhere; a slot count that is no multiple of four leaves a tail either way.
  for (int shift : {0, 1, 2, 3}) {
    AlignCase c = make_case("shifted", 1001, 48, 8, 40, 8, true, 7, 10 + shift);
    c.shift = shift;
    EXPECT_EQ(check_aligners(c), "") << shift;
  }
}

TEST(DispatchEmulation, AlignerSurvivesUndersizedRows) {
  // Outputs sized for fewer rows than the ids give: writes past `rows` are dropped, never made.
  const AlignCase c = make_case("undersized", 512, 16, 0, 16, 8, false, 0, 9);
  const DispatchPlan want = plan_dispatch(c.ids.data(), 512, c.range);
  for (const AlignerConfig& a : every_aligner()) {
    const AlignOut got = run_aligner(c, a.aligner, a.threads, a.chunk, want.rows() / 2, 3);
    EXPECT_EQ(got.error, "") << a.aligner << " " << a.threads;
    EXPECT_EQ(got.offsets, want.offsets) << a.aligner << " " << a.threads;
  }
}

// ---- the gather

TEST(DispatchEmulation, EveryAdvertisedGatherIsBuilt) {
  for (int th : kGatherThreads)
    for (int vb : kGatherVec)
      for (int u : kGatherUnroll) {
        EXPECT_NE(gk::find_kernel<false>(th, vb, u), nullptr) << th << " " << vb << " " << u;
        EXPECT_NE(gk::find_kernel<true>(th, vb, u), nullptr) << th << " " << vb << " " << u;
      }
}

TEST(DispatchEmulation, EveryGatherCopiesRowsAndZeroesPadding) {
  // Rows of 18, 36, 72 and 144 bytes: the widest vector is 2, 4, 8 and 16 bytes. spare > 0 is
  // the layer's case: buffers sized for the worst case, the rows in use read from offsets on
  // the device, and src past them never written by the aligner (poison here).
  for (std::int64_t row_bytes : {18, 36, 72, 144})
    for (std::int64_t spare : {0, 37}) {
      const std::int64_t T = 13, K = 5;
      const AlignCase c = make_case("gather", T * K, 12, 2, 10, 4, false, 3, static_cast<std::uint64_t>(row_bytes));
      const DispatchPlan plan = plan_dispatch(c.ids.data(), T * K, c.range);
      const std::int64_t R = plan.rows(), rows = R + spare;
      std::vector<std::int32_t> src(plan.src);
      src.resize(static_cast<std::size_t>(rows), kPoison);
      std::vector<unsigned char> x(static_cast<std::size_t>(T * row_bytes));
      Rng rng(static_cast<std::uint64_t>(row_bytes));
      for (auto& b : x) b = static_cast<unsigned char>(rng.next() | 1);  // never zero: padding must be
      std::vector<unsigned char> want(static_cast<std::size_t>(rows * row_bytes) + 256, 0xEE);
      std::fill(want.begin(), want.begin() + R * row_bytes, 0);
      for (std::int64_t r = 0; r < R; ++r)
        if (plan.src[r] >= 0) std::memcpy(&want[r * row_bytes], &x[plan.src[r] / K * row_bytes], row_bytes);
      std::string fails;
      for (int th : kGatherThreads)
        for (int vb : kGatherVec)
          for (int u : kGatherUnroll)
            for (int order = 0; order < 2; ++order)
              for (int per : kGatherRows) {
                if (row_bytes % vb || th / per < 32) continue;
                const auto row_fn = gk::find_kernel<false>(th, vb, u);
                const auto token_fn = gk::find_kernel<true>(th, vb, u);
                std::vector<unsigned char> xs(want.size(), 0xEE);
                const gk::Dev d{reinterpret_cast<const char*>(x.data()), src.data(),
                                reinterpret_cast<char*>(xs.data()), rows, T * K, static_cast<int>(K), row_bytes,
                                spare ? &plan.offsets.back() : nullptr};
                const std::string what = "row_bytes=" + std::to_string(row_bytes) + " spare=" +
                                         std::to_string(spare) + " order=" + std::to_string(order) + " threads=" +
                                         std::to_string(th) + " vec=" + std::to_string(vb) + " unroll=" +
                                         std::to_string(u) + " per_cta=" + std::to_string(per) + ": ";
                try {
                  if (order == 0) {
                    simt::launch((rows + per - 1) / per, th, 0, [&] { row_fn(d, per); }, 5);
                  } else {
                    const long long token_blocks = (T + per - 1) / per;
                    const gk::Tok tk{plan.dst.data(), T, token_blocks};
                    simt::launch(
                        token_blocks + (rows + gk::kPadRowsPerBlock - 1) / gk::kPadRowsPerBlock, th, 0,
                        [&] { token_fn(d, tk, per); }, 6);
                  }
                } catch (const std::exception& e) {
                  fails += what + e.what() + "\n";
                  continue;
                }
                if (xs != want) fails += what + "x_sorted differs, or rows past those in use were written\n";
              }
      EXPECT_EQ(fails, "");
    }
}

// ---- the emu backend

TEST(DispatchEmulation, EveryConfigThroughTheEmuBackend) {
  // What `moebench sweep dispatch --backend emu --space full` runs: every config of the cuda
  // space for an H100 (both aligners, both gather orders), through the harness against the
  // reference, with a shared expert, a local expert range and block padding.
  const Params problem{{"tokens", std::int64_t{37}}, {"experts", std::int64_t{24}}, {"topk", std::int64_t{3}},
                       {"shared", std::int64_t{1}},  {"hidden", std::int64_t{40}}, {"align", std::int64_t{8}},
                       {"expert_begin", std::int64_t{6}}, {"expert_end", std::int64_t{19}}};
  const FamilyDesc& f = family("dispatch");
  InputOptions o;
  o.seed = 23;
  const tuner::Prepared p = tuner::prepare(f, complete(f.problem_params, problem, "test"), o);
  const auto space = f.need_backend(Backend::emu).space(p.problem, emu_device_info(), true);
  ASSERT_GT(space.size(), 8u);
  std::string fails;
  for (const Params& c : space) {
    const tuner::Outcome out = tuner::run_emu(p, c);
    if (!out.validation.ok) fails += c.str() + ": " + out.validation.summary() + "\n";
  }
  EXPECT_EQ(fails, "");
}

}  // namespace
