// The wgmma path's own kernels (kernels/gmm/wgmma/wgmma_kernels.cuh: the setup kernel that writes the
// grouped GEMM's per-expert shapes, pointers and strides from `offsets`, and the silu*up
// pass) compiled against emulated primitives (kernels/gmm/emu_primitives.hpp) and run on the
// simt emulator, as the emu backend runs them. The grouped GEMM
// itself is CUTLASS's; here a plain loop plays it, reading only what the setup kernel wrote,
// so a wrong row range, pointer, stride or routed-weight column fails the family's validation.
// tests/gpu/gmm_gpu_test.cpp checks the real kernels; tests/kernels/gmm/wgmma_sass_test.cpp their code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "support/gmm_problems.hpp"
#include "support/wgmma_emulation.hpp"
#include "moe/dtype.hpp"
#include "moe/family.hpp"
#include "common/emu_backend.hpp"
#include "emu/simt_emulator.hpp"
#include "gmm/emu.hpp"
#include "gmm/emu_primitives.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_problem;
namespace emu = gmm::emulated;

std::string run_grid(int threads, long long grid, std::uint32_t seed, const std::function<void()>& body) {
  try {
    simt::launch(grid, threads, 0, body, seed);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

using testing::i32_tensor;

// The per-expert arrays, host-side, poisoned so an expert the kernel skips shows.
struct Arrays {
  explicit Arrays(std::size_t e)
      : problems(3 * e, -7), a(e, reinterpret_cast<const void*>(0x1)), b(a), d(e, reinterpret_cast<void*>(0x1)),
        rw(e, reinterpret_cast<const float*>(0x1)), lda(e, -1), ldb(e, -1), ldd(e, -1) {}
  std::vector<int> problems;
  std::vector<const void*> a, b;
  std::vector<void*> d;
  std::vector<const float*> rw;
  std::vector<long long> lda, ldb, ldd;
  gmm::wgmma::GroupArrays view() {
    return {problems.data(), a.data(), b.data(), d.data(), rw.data(), lda.data(), ldb.data(), ldd.data()};
  }
};

// The setup kernel's arguments for 16-bit tensors of `rows` x k activations and n x k weights.
gmm::wgmma::SetupArgs setup_args(Arrays& arr, const std::vector<std::int32_t>& off, const void* act, const void* w,
                                 void* out, int rows, int n, int k) {
  gmm::wgmma::SetupArgs a;
  a.act = static_cast<const std::uint16_t*>(act);
  a.weight = static_cast<const std::uint16_t*>(w);
  a.offsets = off.data();
  a.out = static_cast<std::uint16_t*>(out);
  a.rows = rows;
  a.n = n;
  a.k = k;
  a.experts = static_cast<int>(off.size()) - 1;
  a.g = arr.view();
  return a;
}

std::string run_setup(const gmm::wgmma::SetupArgs& a, long long grid, std::uint32_t seed = 3) {
  return run_grid(emu::kWgmmaThreads, grid, seed, [&] { emu::wgmma_setup_kernel(a); });
}

using testing::check_wgmma_stage;

TEST(WgmmaEmulation, BothStagesAgainstTheReference) {
  // Experts with 0, 1, 36 and 0 rows, K and N not multiples of any tile; grids of 1 CTA (the
  // grid-stride loops walk everything) and of more CTAs than work.
  for (const char* stage : {"up", "down"})
    for (const char* dt : {"bf16", "f16"})
      for (long long grid : {1LL, 7LL}) {
        Params pr = gmm_problem(19, 4, 2, 0, 72, 40, 1, stage, dt);
        if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
        TensorMap given;
        given["offsets"] = i32_tensor({0, 0, 1, 37, 37});
        EXPECT_EQ(check_wgmma_stage(pr, std::move(given), 11, grid), "") << stage << " " << dt << " grid " << grid;
      }
}

TEST(WgmmaEmulation, SwappedOperandsAgainstTheReference) {
  // The swapped-operand tile's arrays (weights as A, the expert's rows as B, D^T column-major,
  // the routed weight per column): empty experts, one row, ragged and padded segments, both
  // stages, grids of 1 and 7.
  for (const char* stage : {"up", "down"})
    for (long long grid : {1LL, 7LL}) {
      Params pr = gmm_problem(19, 4, 2, 0, 72, 40, 1, stage);
      if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
      TensorMap given;
      given["offsets"] = i32_tensor({0, 0, 1, 37, 37});
      EXPECT_EQ(check_wgmma_stage(pr, std::move(given), 12, grid, true), "") << stage << " grid " << grid;
      Params padded = gmm_problem(40, 6, 2, 1, 64, 48, 8, stage);
      if (std::string(stage) == "down") padded.set("routed_weight", std::int64_t{1});
      EXPECT_EQ(check_wgmma_stage(padded, {}, 22, grid, true), "") << stage << " grid " << grid;
    }
  // The arrays themselves: CUTLASS's M is the weights' rows, N the expert's rows.
  Arrays arr(3);
  std::vector<std::int32_t> off = {0, 5, 5, 12};
  alignas(16) static std::uint16_t act[12 * 8], w[3 * 16 * 8], out[12 * 16];
  gmm::wgmma::SetupArgs a = setup_args(arr, off, act, w, out, 12, 16, 8);
  a.swap = true;
  ASSERT_EQ(run_setup(a, 1), "");
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(arr.problems[3 * e], 16) << e;
    EXPECT_EQ(arr.problems[3 * e + 1], off[e + 1] - off[e]) << e;
    EXPECT_EQ(arr.a[e], w + e * 16 * 8) << e;
    EXPECT_EQ(arr.b[e], act + off[e] * 8) << e;
    EXPECT_EQ(arr.d[e], out + off[e] * 16) << e;
  }
}

TEST(WgmmaEmulation, RaggedPaddedAndOneExpertWithEveryRow) {
  for (const char* stage : {"up", "down"}) {
    // Generated routing with block padding (align 8: padding rows are zero and must come out 0).
    Params pr = gmm_problem(40, 6, 2, 1, 64, 48, 8, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    EXPECT_EQ(check_wgmma_stage(pr, {}, 21, 2), "") << stage;
    // Top-1 routing of 64 tokens over 16 experts: uneven counts.
    EXPECT_EQ(check_wgmma_stage(gmm_problem(64, 16, 1, 0, 32, 24, 1, stage), {}, 4, 3), "") << stage;
    // One expert holds every row.
    TensorMap given;
    given["offsets"] = i32_tensor({0, 0, 0, 24, 24});
    EXPECT_EQ(check_wgmma_stage(gmm_problem(12, 4, 2, 0, 32, 16, 1, stage), std::move(given), 5, 1), "") << stage;
  }
}

TEST(WgmmaEmulation, NoRowsAtAll) {
  // Every expert empty: the setup gives every group M = 0 (CUTLASS then runs no tile) and the
  // silu pass touches nothing.
  Arrays arr(5);
  std::vector<std::int32_t> off(6, 0);
  alignas(16) static std::uint16_t act[16], w[5 * 16 * 8], out[16];
  ASSERT_EQ(run_setup(setup_args(arr, off, act, w, out, 0, 16, 8), 1), "");
  for (int e = 0; e < 5; ++e) {
    EXPECT_EQ(arr.problems[3 * e], 0) << e;
    EXPECT_EQ(arr.problems[3 * e + 1], 16);
    EXPECT_EQ(arr.problems[3 * e + 2], 8);
    EXPECT_EQ(arr.b[e], w + e * 16 * 8);
  }
  std::uint16_t h[8];
  std::fill(std::begin(h), std::end(h), 0xABCD);
  gmm::wgmma::SiluArgs si{act, off.data(), h, 0, 8, 5};
  ASSERT_EQ(run_grid(emu::kWgmmaThreads, 1, 1, [&] { emu::wgmma_silu_kernel<true>(si); }), "");
  for (auto v : h) EXPECT_EQ(v, 0xABCD);
}

TEST(WgmmaEmulation, SetupArraysForOddAndBrokenOffsets) {
  // Odd segment bounds (no alignment), routed weights, and offsets that run past the rows or
  // go backwards (a broken dispatch): every range stays inside [0, rows].
  const int rows = 11, n = 24, k = 16, E = 5;
  std::vector<std::int32_t> off = {0, 3, 3, 10, 7, 40};  // expert 3 backwards, expert 4 past the end
  std::vector<std::uint16_t> act(rows * k), w(E * n * k), out(rows * n);
  std::vector<float> rw(rows);
  Arrays arr(E);
  gmm::wgmma::SetupArgs a = setup_args(arr, off, act.data(), w.data(), out.data(), rows, n, k);
  a.row_weight = rw.data();
  ASSERT_EQ(run_setup(a, 1), "");
  // Each expert reads only its own two offsets, clamped (as the mma kernel's segments are):
  // expert 3 runs backwards (no rows), expert 4 starts at 7 and is cut at the last row.
  const int begin[E] = {0, 3, 3, 10, 7}, count[E] = {3, 0, 7, 0, 4};
  for (int e = 0; e < E; ++e) {
    EXPECT_EQ(arr.problems[3 * e], count[e]) << e;
    EXPECT_EQ(arr.a[e], act.data() + begin[e] * k) << e;
    EXPECT_EQ(arr.b[e], w.data() + e * n * k) << e;
    EXPECT_EQ(arr.d[e], out.data() + begin[e] * n) << e;
    EXPECT_EQ(arr.rw[e], rw.data() + begin[e]) << e;
    EXPECT_EQ(arr.lda[e], k);
    EXPECT_EQ(arr.ldb[e], k);
    EXPECT_EQ(arr.ldd[e], n);
  }
  // Without routed weights the column pointers are null: the epilogue scales by 1.
  a.row_weight = nullptr;
  ASSERT_EQ(run_setup(a, 2), "");
  for (int e = 0; e < E; ++e) EXPECT_EQ(arr.rw[e], nullptr);
}

TEST(WgmmaEmulation, SiluWritesEveryExpertRowAndNothingElse) {
  // Rows past offsets[E] (a buffer sized for the worst case) keep their contents; every row
  // before it is silu(gate) * up of its own gate|up row.
  const int rows = 9, I = 24, used = 7;
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<std::uint16_t> gu(rows * 2 * I), h(rows * I, 0x7FC1);
  for (auto& v : gu) v = float_to_bf16(nd(rng));
  std::vector<std::int32_t> off = {0, 2, 2, used};
  gmm::wgmma::SiluArgs si{gu.data(), off.data(), h.data(), rows, I, 3};
  ASSERT_EQ(run_grid(emu::kWgmmaThreads, 1, 9, [&] { emu::wgmma_silu_kernel<true>(si); }), "");
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < I; ++j) {
      const double g = bf16_to_float(gu[r * 2 * I + j]), u = bf16_to_float(gu[r * 2 * I + I + j]);
      const double want = g / (1 + std::exp(-g)) * u;
      if (r < used)
        EXPECT_NEAR(bf16_to_float(h[r * I + j]), want, 1e-2 * std::abs(want) + 1e-6) << r << "," << j;
      else
        EXPECT_EQ(h[r * I + j], 0x7FC1) << r << "," << j;
    }
}

}  // namespace
}  // namespace moe
