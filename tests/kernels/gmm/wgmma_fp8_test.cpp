// The fp8 wgmma path on the cpu: its configs in the cuda backend's space (and the refusals that
// say why not), and its own kernels run on the simt emulator around a host loop that plays
// CUTLASS's blockwise-scaled grouped GEMM, reading only what the setup kernel wrote (pointers,
// scale pointers, scale layouts), validated by the family against the fp8 reference.
// tests/gpu/gmm_fp8_wgmma_gpu_test.cpp runs the real CUTLASS kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/emu_backend.hpp"
#include "emu/simt_emulator.hpp"
#include "gmm/emu.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/family.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/dtype.hpp"
#include "moe/family.hpp"
#include "support/gmm_problems.hpp"
#include "support/wgmma_emulation.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_problem;
using testing::i32_tensor;
namespace emu = gmm::emulated;

Params fp8_problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t D, std::int64_t I, std::int64_t A,
                   const std::string& stage, const std::string& fmt = "fp32") {
  Params p = gmm_problem(T, E, k, 0, D, I, A, stage, "fp8");
  p.set("scale_fmt", fmt);
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return complete(gmm_family().problem_params, p, "gmm");
}

Params wgmma_config(int bm, int bn, int bk, int cluster_m, bool pingpong) {
  gmm::wgmma::Config c;
  c.shape = gmm::wgmma::TileShape{bm, bn, bk, cluster_m, 1, pingpong};
  return gmm::wgmma::config_params(c);
}

// The H100 the emu backend describes, as a cuda device.
DeviceInfo hopper() {
  DeviceInfo d = emu_device_info();
  d.backend = Backend::cuda;
  return d;
}

TEST(WgmmaFp8Configs, TheSpaceHoldsTheFp8GroupedGemmsAndThePrefillDefaultIsOne) {
  const BackendImpl& cuda = gmm_family().need_backend(Backend::cuda);
  for (const char* stage : {"up", "down"}) {
    const Params p = fp8_problem(4096, 8, 2, 256, 256, 1, stage);
    const auto space = cuda.space(p, hopper(), true);
    std::vector<std::string> shapes;
    for (const Params& c : space) {
      EXPECT_EQ(cuda.invalid_reason(p, c, hopper()), "") << c.str();
      if (c.s("kernel") != "wgmma") continue;  // the fp8 mma kernel's tiles (gmm_fp8_test.cpp)
      shapes.push_back(gmm::wgmma::shape_str(gmm::wgmma::parse_config(c).shape));
    }
    EXPECT_EQ(shapes, (std::vector<std::string>{"128x128x128 cooperative cluster 2x1", "64x128x128 pingpong cluster 1x1",
                                                "128x128x128 cooperative cluster 1x2",
                                                "32x128x128 pingpong cluster 1x2 swapped"}))
        << stage;
    const Params d = cuda.default_config(p, hopper());
    EXPECT_EQ(d.s("kernel"), "wgmma") << d.str();
    EXPECT_EQ(cuda.invalid_reason(p, d, hopper()), "") << d.str();
    // Up's workspace holds the GEMM's fp32 gate|up rows for the silu*up+quant pass; down's
    // epilogue writes bf16 y_sorted itself: no fp32 rows, no rounding pass (setup + GEMM).
    const GmmSpec s = GmmSpec::parse(p);
    const auto fp32_rows = static_cast<std::size_t>(s.max_rows() * s.n_w()) * sizeof(float);
    const auto slot = gmm::wgmma::launch_slot(s, gmm::wgmma::parse_config(d), s.max_rows());
    if (std::string(stage) == "up") {
      EXPECT_GE(cuda.workspace_bytes(p, d), fp32_rows);
      EXPECT_EQ(slot->kernels, 3);
    } else {
      EXPECT_LT(cuda.workspace_bytes(p, d), fp32_rows / 4);
      EXPECT_EQ(slot->kernels, 2);
    }
  }
}

TEST(WgmmaFp8Configs, RefusalsNameWhy) {
  const BackendImpl& cuda = gmm_family().need_backend(Backend::cuda);
  const Params fp8 = fp8_problem(64, 8, 2, 256, 256, 1, "up");
  // A bf16 tile for an fp8 problem, and an fp8 tile for a bf16 one: each names what is built.
  const std::string bf16_tile = cuda.invalid_reason(fp8, wgmma_config(128, 128, 64, 1, false), hopper());
  EXPECT_NE(bf16_tile.find("no e4m3 wgmma kernel is built with tile 128x128x64 cooperative cluster 1x1"),
            std::string::npos) << bf16_tile;
  EXPECT_NE(bf16_tile.find("built: 128x128x128 cooperative cluster 2x1; 64x128x128 pingpong cluster 1x1; "
                           "128x128x128 cooperative cluster 1x2; 32x128x128 pingpong cluster 1x2 swapped"),
            std::string::npos) << bf16_tile;
  const Params bf16 = complete(gmm_family().problem_params, gmm_problem(64, 8, 2, 0, 256, 256, 1), "gmm");
  const std::string fp8_tile = cuda.invalid_reason(bf16, wgmma_config(64, 128, 128, 1, true), hopper());
  EXPECT_NE(fp8_tile.find("no bf16 wgmma kernel is built with tile 64x128x128 pingpong"), std::string::npos) << fp8_tile;
  // Not Hopper, or too little shared memory.
  DeviceInfo ampere = hopper();
  ampere.cc_major = 8;
  const std::string arch = cuda.invalid_reason(fp8, wgmma_config(64, 128, 128, 1, true), ampere);
  EXPECT_NE(arch.find("needs an sm_90 (Hopper) device"), std::string::npos) << arch;
  DeviceInfo small = hopper();
  small.smem_optin = 48 * 1024;
  const std::string smem = cuda.invalid_reason(fp8, wgmma_config(128, 128, 128, 2, false), small);
  EXPECT_NE(smem.find("bytes of shared memory"), std::string::npos) << smem;
  // Every fp8 grouped GEMM shape is in the full space (beside the fp8 mma kernel's tiles).
  int wgmma_configs = 0;
  for (const Params& c : cuda.space(fp8, hopper(), true)) wgmma_configs += c.s("kernel") == "wgmma";
  EXPECT_EQ(wgmma_configs, 4);
}

using testing::check_wgmma_stage;

TEST(WgmmaFp8Emulation, BothStagesAgainstTheReference) {
  // Experts with 0, 1, 21 and 0 rows; K over two and three scale blocks; both scale formats;
  // a grid of one CTA (grid-stride loops) and one of more CTAs than work.
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"})
      for (long long grid : {1LL, 7LL}) {
        TensorMap given;
        given["offsets"] = i32_tensor({0, 0, 1, 22, 22});
        EXPECT_EQ(check_wgmma_stage(fp8_problem(11, 4, 2, 256, 384, 1, stage, fmt), std::move(given), 13, grid), "")
            << stage << " " << fmt << " grid " << grid;
      }
}

TEST(WgmmaFp8Emulation, RoutedAndPaddedRows) {
  // Generated routing with block padding (padding rows quantize to zero and must come out 0).
  for (const char* stage : {"up", "down"}) EXPECT_EQ(check_wgmma_stage(fp8_problem(24, 6, 2, 256, 256, 8, stage), {}, 29, 0), "") << stage;
}

TEST(WgmmaFp8Configs, SetupScaleLayoutsAreEveryInstantiationsOwn) {
  // The ints the setup kernel writes (scale_layout) against each compiled fp8 GEMM's CUTLASS
  // layouts, swapped operands (a scale per 128 weight rows along M, one per row along N) included.
  int checked = 0;
  for (const auto& e : gmm::wgmma::entries()) {
    if (!e.fp8) continue;
    ASSERT_NE(e.check_scale_layouts, nullptr) << gmm::wgmma::shape_str(e.shape);
    ASSERT_NE(e.fp8_down.check_scale_layouts, nullptr) << gmm::wgmma::shape_str(e.shape);
    EXPECT_NO_THROW(e.check_scale_layouts()) << gmm::wgmma::shape_str(e.shape);
    EXPECT_NO_THROW(e.fp8_down.check_scale_layouts()) << gmm::wgmma::shape_str(e.shape) << " down";
    checked += e.shape.swapped() ? 10 : 1;
  }
  EXPECT_EQ(checked, 13);  // three fp8 shapes and the swapped one
}

TEST(WgmmaFp8Emulation, SwappedOperandsAgainstTheReference) {
  // The swapped-operand tile's arrays: the weights as A with their 128x128 block scales, the
  // expert's rows as B with a scale per row, D^T column-major, the routed weight per column.
  // Empty experts, one row, ragged and padded segments, both scale formats, grids of 1 and 7.
  for (const char* stage : {"up", "down"}) {
    for (const char* fmt : {"fp32", "ue8m0"})
      for (long long grid : {1LL, 7LL}) {
        TensorMap given;
        given["offsets"] = i32_tensor({0, 0, 1, 22, 22});
        EXPECT_EQ(check_wgmma_stage(fp8_problem(11, 4, 2, 256, 384, 1, stage, fmt), std::move(given), 14, grid, true), "")
            << stage << " " << fmt << " grid " << grid;
      }
    EXPECT_EQ(check_wgmma_stage(fp8_problem(24, 6, 2, 256, 256, 8, stage), {}, 31, 0, true), "") << stage;
  }
}

TEST(WgmmaFp8Emulation, SetupWritesScalePointersAndLayouts) {
  // Odd, empty and broken segments: byte offsets for e4m3 operands and fp32 output, each
  // expert's x_scale rows and w_scale slab, and CUTLASS's layout ints (mn, kb, 1, kb, mn*kb).
  const int rows = 11, n = 256, k = 384, E = 4, kb = k / 128;
  std::vector<std::int32_t> off = {0, 3, 3, 10, 40};  // expert 3 runs past the rows
  std::vector<std::uint8_t> act(rows * k), w(E * n * k);
  std::vector<float> out(rows * n), xs(rows * kb), ws(E * (n / 128) * kb);
  std::vector<int> problems(3 * E, -7), lsfa(E * gmm::wgmma::kScaleLayoutInts, -7), lsfb(lsfa);
  std::vector<const void*> pa(E), pb(E);
  std::vector<void*> pd(E);
  std::vector<const float*> prw(E), psfa(E), psfb(E);
  std::vector<long long> lda(E, -1), ldb(E, -1), ldd(E, -1);
  gmm::wgmma::SetupArgs a;
  a.act = reinterpret_cast<const std::uint16_t*>(act.data());
  a.weight = reinterpret_cast<const std::uint16_t*>(w.data());
  a.offsets = off.data();
  a.out = reinterpret_cast<std::uint16_t*>(out.data());
  a.rows = rows;
  a.n = n;
  a.k = k;
  a.experts = E;
  a.in_bytes = 1;
  a.out_bytes = 4;
  a.act_scale = xs.data();
  a.weight_scale = ws.data();
  a.g = {problems.data(), pa.data(), pb.data(), pd.data(), prw.data(), lda.data(), ldb.data(), ldd.data(),
         psfa.data(),     psfb.data(), lsfa.data(), lsfb.data()};
  const int begin[E] = {0, 3, 3, 10}, count[E] = {3, 0, 7, 1};
  // Swapped: CUTLASS's M is the weights' n rows (a scale per 128 of them), its N the rows.
  for (bool swap : {false, true}) {
    a.swap = swap;
    ASSERT_NO_THROW(simt::launch(1, emu::kWgmmaThreads, 0, [&] { emu::wgmma_setup_kernel(a); }, 5));
    for (int e = 0; e < E; ++e) {
      const void* rows_of_e = act.data() + begin[e] * k;
      const void* weights_of_e = w.data() + static_cast<std::size_t>(e) * n * k;
      const float* row_scales = xs.data() + begin[e] * kb;
      const float* weight_scales = ws.data() + e * (n / 128) * kb;
      const std::vector<int> row_layout = {count[e], kb, 1, kb, count[e] * kb};
      const std::vector<int> weight_layout = {n / 128, kb, 1, kb, n / 128 * kb};
      EXPECT_EQ(problems[3 * e], swap ? n : count[e]) << e << " swap " << swap;
      EXPECT_EQ(problems[3 * e + 1], swap ? count[e] : n) << e << " swap " << swap;
      EXPECT_EQ(pa[e], swap ? weights_of_e : rows_of_e) << e << " swap " << swap;
      EXPECT_EQ(pb[e], swap ? rows_of_e : weights_of_e) << e << " swap " << swap;
      EXPECT_EQ(pd[e], out.data() + begin[e] * n) << e << " swap " << swap;
      EXPECT_EQ(psfa[e], swap ? weight_scales : row_scales) << e << " swap " << swap;
      EXPECT_EQ(psfb[e], swap ? row_scales : weight_scales) << e << " swap " << swap;
      const int* la = lsfa.data() + 5 * e;
      const int* lb = lsfb.data() + 5 * e;
      EXPECT_EQ(std::vector<int>(la, la + 5), swap ? weight_layout : row_layout) << e << " swap " << swap;
      EXPECT_EQ(std::vector<int>(lb, lb + 5), swap ? row_layout : weight_layout) << e << " swap " << swap;
    }
  }
}

}  // namespace
}  // namespace moe
