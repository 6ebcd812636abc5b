// The library peers of the gmm cuda backend (kernels/gmm/cublas/): kernel=cublas (cuBLAS's
// grouped GEMM) and kernel=cublaslt (cuBLASLt's block-scaled fp8 matmul per expert). Everything
// host-side without a GPU: the group arrays built from offsets (empty experts, an expert-parallel
// slice), the offsets check, the reasons a config is refused, the space on a described Hopper,
// peer_of, the emu backend leaving them out, and the workspace carving; their own small kernels
// (the scale layouts cuBLASLt reads, the routed weight, the bf16 rounding) run on the emulator.
// tests/gpu/gmm_cublas_gpu_test.cpp runs them on a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "gmm/cublas/configs.hpp"
#include "gmm/family.hpp"
#include "moe/dtype.hpp"
#include "moe/error.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/problem/kernel_static.hpp"
#include "emu/simt_emulator.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/cublas/epilogue_kernels.cuh"

namespace moe {
namespace {

namespace lib = gmm::cublas;
using testing::fp8_gmm_problem;
using testing::gmm_problem;

const FamilyDesc& F() { return gmm_family(); }
const BackendImpl& cuda() { return F().need_backend(Backend::cuda); }
const BackendImpl& emu() { return F().need_backend(Backend::emu); }
DeviceInfo h200() { return tuner::described_hopper("NVIDIA H200 (described)"); }
Params complete_problem(const Params& p) { return complete(F().problem_params, p, "gmm"); }

Params lib_config(const char* kernel, const char* lt_out = "f32") {
  return complete(cuda().config_params, Params{{"kernel", std::string(kernel)}, {"lt_out", std::string(lt_out)}},
                  "config");
}

std::vector<Params> of_kernel(const std::vector<Params>& v, const std::string& k) {
  std::vector<Params> r;
  for (const Params& c : v)
    if (c.s("kernel") == k) r.push_back(c);
  return r;
}

TEST(GmmLibraryPeers, GroupArraysSkipEmptyExpertsAndIndexTheLocalSlice) {
  // Experts 2..5 of 8 are local; local 0 and 2 have no rows.
  Params p = complete_problem(gmm_problem(6, 8, 2, 0, 64, 48, 1, "up"));
  p.set("expert_begin", std::int64_t{2});
  p.set("expert_end", std::int64_t{6});
  const GmmSpec up = GmmSpec::parse(p);
  const std::vector<std::int32_t> off = {0, 0, 5, 5, 12};
  const auto gs = lib::groups(off.data(), up.e_local());
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_EQ(gs[0].expert, 1);
  EXPECT_EQ(gs[0].begin, 0);
  EXPECT_EQ(gs[0].rows, 5);
  EXPECT_EQ(gs[1].expert, 3);
  EXPECT_EQ(gs[1].begin, 5);
  EXPECT_EQ(gs[1].rows, 7);
  // Up: out[rows, 2I] = x[rows, D] * w13_e[2I, D]^T, i.e. cuBLAS's C^T[2I, rows] = op_T(W) * x^T.
  const std::uintptr_t act = 0x100000, w = 0x800000, out = 0x4000000;
  const auto g = lib::grouped_args(up, gs, act, w, out, 2, 2);
  ASSERT_EQ(g.m.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(g.m[i], 96);
    EXPECT_EQ(g.k[i], 64);
    EXPECT_EQ(g.lda[i], 64);
    EXPECT_EQ(g.ldb[i], 64);
    EXPECT_EQ(g.ldc[i], 96);
  }
  EXPECT_EQ(g.n[0], 5);
  EXPECT_EQ(g.n[1], 7);
  EXPECT_EQ(g.a[0], w + 1u * 96 * 64 * 2);  // local expert 1's slab of w13 [E_local, 2I, D]
  EXPECT_EQ(g.a[1], w + 3u * 96 * 64 * 2);
  EXPECT_EQ(g.b[0], act);
  EXPECT_EQ(g.b[1], act + 5u * 64 * 2);
  EXPECT_EQ(g.c[0], out);
  EXPECT_EQ(g.c[1], out + 5u * 96 * 2);
  // Down: K is the intermediate size, n_w the hidden one.
  p.set("stage", std::string("down"));
  const GmmSpec down = GmmSpec::parse(p);
  const auto gd = lib::grouped_args(down, gs, act, w, out, 2, 2);
  EXPECT_EQ(gd.m[1], 64);
  EXPECT_EQ(gd.k[1], 48);
  EXPECT_EQ(gd.ldc[1], 64);
  EXPECT_EQ(gd.a[1], w + 3u * 64 * 48 * 2);
  EXPECT_EQ(gd.b[1], act + 5u * 48 * 2);
  EXPECT_EQ(gd.c[1], out + 5u * 64 * 2);
  // Every expert empty: no group at all.
  const std::vector<std::int32_t> none = {0, 0, 0, 0, 0};
  EXPECT_TRUE(lib::groups(none.data(), 4).empty());
}

TEST(GmmLibraryPeers, HostOffsetsAreCheckedNamingTheEntry) {
  const std::vector<std::int32_t> ok = {0, 3, 3, 9};
  EXPECT_NO_THROW(lib::check_host_offsets(ok.data(), 3, 9));
  EXPECT_NO_THROW(lib::check_host_offsets(ok.data(), 3, 12));  // rows past offsets[E] are no expert's
  auto msg = [](std::vector<std::int32_t> v, std::int64_t rows) {
    try {
      lib::check_host_offsets(v.data(), static_cast<std::int64_t>(v.size()) - 1, rows);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({0, 5, 3, 9}, 9).find("offsets[2] = 3 is below offsets[1] = 5"), std::string::npos);
  EXPECT_NE(msg({0, 5, 10}, 9).find("offsets[2] = 10 is past the 9 rows"), std::string::npos);
  EXPECT_NE(msg({1, 5, 9}, 9).find("offsets[0] = 1 (must be 0)"), std::string::npos);
  EXPECT_NE(msg({0, 5, 3, 9}, 9).find("pass dispatch's offsets"), std::string::npos);
}

TEST(GmmLibraryPeers, InvalidReasonsSayWhatToUse) {
  const DeviceInfo dev = h200();
  const Params bf16 = complete_problem(gmm_problem(64, 8, 2, 0, 512, 256, 1, "up"));
  const Params fp8 = complete_problem(fp8_gmm_problem(64, 8, 2, 512, 256, 1, "up"));
  const Params fp8_down = complete_problem(fp8_gmm_problem(64, 8, 2, 512, 256, 1, "down"));
  auto why = [&](const Params& pr, const Params& c, const DeviceInfo& d) { return cuda().invalid_reason(pr, c, d); };
  EXPECT_EQ(why(bf16, lib_config("cublas"), dev), "");
  EXPECT_EQ(why(fp8, lib_config("cublaslt"), dev), "");
  EXPECT_EQ(why(fp8_down, lib_config("cublaslt", "bf16"), dev), "");
  EXPECT_NE(why(fp8, lib_config("cublas"), dev).find("use kernel=cublaslt"), std::string::npos);
  EXPECT_NE(why(bf16, lib_config("cublaslt"), dev).find("for dtype=bf16 use kernel=cublas"), std::string::npos);
  EXPECT_NE(why(fp8, lib_config("cublaslt", "bf16"), dev).find("leave lt_out=f32"), std::string::npos);
  DeviceInfo ampere = dev;
  ampere.cc_major = 8;
  ampere.name = "NVIDIA A100 (described)";
  EXPECT_NE(why(fp8, lib_config("cublaslt"), ampere).find("run on Hopper (sm_90); NVIDIA A100 (described) is sm_80"),
            std::string::npos);
  EXPECT_EQ(why(bf16, lib_config("cublas"), ampere), "");
  const Params odd = complete_problem(gmm_problem(16, 8, 2, 0, 100, 64, 1, "up"));
  EXPECT_NE(why(odd, lib_config("cublas"), dev).find("must be multiples of 8"), std::string::npos);
  // The other kernels' parameters on a library config, and the library's on ours.
  Params tiled = lib_config("cublas");
  tiled.set("block_m", std::int64_t{128});
  EXPECT_NE(why(bf16, tiled, dev).find("block_m is a parameter of moebench's own kernels"), std::string::npos);
  Params mma = complete(cuda().config_params, cuda().default_config(bf16, dev), "config");
  mma.set("lt_out", std::string("bf16"));
  EXPECT_NE(why(bf16, mma, dev).find("lt_out is a kernel=cublaslt parameter"), std::string::npos);
  // A config given by its kernel alone completes to a valid one.
  EXPECT_EQ(fill_config(cuda(), bf16, Params{{"kernel", std::string("cublas")}}, dev, "config").s("kernel"), "cublas");
}

TEST(GmmLibraryPeers, TheSpaceOffersOneOfEachOnHopper) {
  const DeviceInfo dev = h200();
  for (std::int64_t T : {1, 64, 4096})
    for (const char* stage : {"up", "down"}) {
      const Params bf16 = complete_problem(gmm_problem(T, 64, 6, 0, 2048, 768, 16, stage));
      const auto curated = cuda().space(bf16, dev, false);
      EXPECT_EQ(of_kernel(curated, "cublas").size(), 1u) << bf16.str();
      EXPECT_TRUE(of_kernel(cuda().space(bf16, dev, true), "cublaslt").empty()) << bf16.str();
      const Params fp8 = complete_problem(fp8_gmm_problem(T, 256, 8, 7168, 2048, 16, stage));
      const auto lt = of_kernel(cuda().space(fp8, dev, false), "cublaslt");
      ASSERT_EQ(lt.size(), 1u) << fp8.str();
      // Down multiplies by the routed weight: fp32 rows, rounded once in the epilogue.
      EXPECT_EQ(lt[0].s("lt_out"), "f32") << fp8.str();
      EXPECT_EQ(of_kernel(cuda().space(fp8, dev, true), "cublaslt").size(), std::string(stage) == "down" ? 2u : 1u);
      EXPECT_TRUE(of_kernel(cuda().space(fp8, dev, true), "cublas").empty());
      for (const Params& pr : {bf16, fp8})
        for (const Params& c : cuda().space(pr, dev, true)) {
          if (peer_of(cuda(), c).empty()) continue;
          EXPECT_EQ(cuda().invalid_reason(pr, c, dev), "") << pr.str() << " " << c.str();
          EXPECT_EQ(cuda().workspace_bytes(pr, c), lib::layout(GmmSpec::parse(pr), lib::parse_config(c)).total);
        }
      // The default is always moebench's own kernel.
      EXPECT_EQ(peer_of(cuda(), cuda().default_config(bf16, dev)), "");
      EXPECT_EQ(peer_of(cuda(), cuda().default_config(fp8, dev)), "");
    }
  // Without routed weights, down's curated cuBLASLt config writes bf16 y_sorted directly.
  Params plain = complete_problem(fp8_gmm_problem(64, 8, 2, 512, 256, 1, "down"));
  plain.set("routed_weight", std::int64_t{0});
  const auto lt = of_kernel(cuda().space(plain, dev, false), "cublaslt");
  ASSERT_EQ(lt.size(), 1u);
  EXPECT_EQ(lt[0].s("lt_out"), "bf16");
  // Not Hopper: no cuBLASLt fp8 config.
  DeviceInfo ada = dev;
  ada.cc_major = 8;
  ada.cc_minor = 9;
  EXPECT_TRUE(of_kernel(cuda().space(plain, ada, true), "cublaslt").empty());
}

TEST(GmmLibraryPeers, PeerOfNamesTheLibraryAndLeavesOursUnnamed) {
  const DeviceInfo dev = h200();
  EXPECT_EQ(peer_of(cuda(), lib_config("cublas")), "cuBLAS");
  EXPECT_EQ(peer_of(cuda(), lib_config("cublaslt")), "cuBLASLt");
  const Params fp8 = complete_problem(fp8_gmm_problem(4096, 8, 2, 512, 256, 1, "up"));
  int ours = 0;
  for (const Params& c : cuda().space(fp8, dev, true))
    if (c.s("kernel") == "mma" || c.s("kernel") == "wgmma") {
      EXPECT_EQ(peer_of(cuda(), c), "") << c.str();
      ++ours;
    }
  EXPECT_GT(ours, 0);
  EXPECT_EQ(peer_of(F().need_backend(Backend::cpu), lib_config("cublas")), "");
}

TEST(GmmLibraryPeers, TheEmuBackendOffersNoneAndRefusesThem) {
  for (const Params& pr : {complete_problem(gmm_problem(64, 8, 2, 0, 512, 256, 1, "up")),
                           complete_problem(fp8_gmm_problem(64, 8, 2, 512, 256, 1, "down"))}) {
    for (const bool full : {false, true}) {
      const auto v = emu().space(pr, DeviceInfo{}, full);
      EXPECT_FALSE(v.empty());
      for (const Params& c : v) EXPECT_EQ(peer_of(cuda(), c), "") << c.str();
    }
    const std::string why = emu().invalid_reason(pr, lib_config(GmmSpec::parse(pr).fp8 ? "cublaslt" : "cublas"), {});
    EXPECT_NE(why.find("which the emulator cannot run"), std::string::npos) << why;
    EXPECT_NE(why.find("--backend cuda"), std::string::npos) << why;
  }
}

TEST(GmmLibraryPeers, WorkspaceRegionsAndScaleBlocksDoNotOverlap) {
  // K/128 = 6 (not a multiple of 4): the weight scales are repacked too.
  Params pr = complete_problem(fp8_gmm_problem(40, 8, 2, 256, 768, 1, "down"));
  const GmmSpec s = GmmSpec::parse(pr);
  ASSERT_TRUE(lib::weight_scales_repacked(s));
  for (const bool f32 : {true, false}) {
    const lib::Layout l = lib::layout(s, {lib::Kind::cublaslt, f32});
    EXPECT_LT(l.act_scales, l.w_scales);
    EXPECT_LE(l.w_scales + static_cast<std::size_t>(8 * 2 * 8) * 4, l.gate_up);
    EXPECT_EQ(l.lt_bytes, lib::kLtWorkspaceBytes);
    EXPECT_EQ(l.total, l.lt + l.lt_bytes);
    for (std::size_t off : {l.act_scales, l.w_scales, l.gate_up, l.lt}) EXPECT_EQ(off % 256, 0u);
    EXPECT_EQ(l.lt - l.gate_up, f32 ? (static_cast<std::size_t>(s.max_rows()) * 256 * 4 + 255) / 256 * 256 : 0u);
  }
  // Ragged experts: every expert's M-major block starts on 16 bytes, after the one before, and
  // inside the region sized for the most rows.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const long long kb = 1 + rng() % 9, E = 1 + rng() % 12;
    long long begin = 0, last_end = 0;
    for (long long e = 0; e < E; ++e) {
      const long long rows = rng() % 5 == 0 ? 0 : rng() % 40;
      const long long base = lib::act_scale_base(begin, kb, e);
      EXPECT_EQ(base % 4, 0);
      EXPECT_GE(base, last_end);
      last_end = base + rows * kb;
      begin += rows;
    }
    EXPECT_LE(last_end, begin * kb + 4 * E + 4);
  }
  // cuBLAS's grouped GEMM: the pointer arrays, then (up) the 16-bit gate|up rows.
  const GmmSpec up = GmmSpec::parse(complete_problem(gmm_problem(40, 8, 2, 0, 256, 128, 1, "up")));
  const lib::Layout g = lib::layout(up, {lib::Kind::cublas, true});
  EXPECT_EQ(g.pointers, 0u);
  EXPECT_EQ(g.gate_up, 256u);
  EXPECT_EQ(g.total, 256 + (static_cast<std::size_t>(up.max_rows()) * 256 * 2 + 255) / 256 * 256);
}

// The kernels' own small kernels on the emulator, as the GPU runs them.
void launch(long long grid, const std::function<void()>& body) {
  simt::launch(grid, gmm::emulated::lib::kThreads, 0, body, 3);
}

TEST(GmmLibraryPeers, TheScaleLayoutKernelWritesEachExpertMMajorAndRepacksWeightScales) {
  std::mt19937 rng(11);
  const int kb = 6, nb = 3, kb_pad = 8, E = 5;
  const std::vector<std::int32_t> off = {0, 7, 7, 8, 30, 33};
  const int rows = 35;  // two rows past offsets[E], which belong to no expert
  std::vector<float> act(static_cast<std::size_t>(rows * kb)), w(static_cast<std::size_t>(E * nb * kb));
  for (auto& v : act) v = static_cast<float>(rng() % 1000) / 7.0f + 0.5f;
  for (auto& v : w) v = static_cast<float>(rng() % 1000) / 3.0f + 0.25f;
  std::vector<float> act_out(static_cast<std::size_t>(rows * kb + 4 * E + 4), -1.0f);
  std::vector<float> w_out(static_cast<std::size_t>(E * nb * kb_pad), -1.0f);
  gmm::emulated::lib::ScaleLayoutArgs a;
  a.act_scale = act.data();
  a.act_out = act_out.data();
  a.w_scale = w.data();
  a.w_out = w_out.data();
  a.offsets = off.data();
  a.rows = rows;
  a.kb = kb;
  a.experts = E;
  a.nb = nb;
  a.kb_pad = kb_pad;
  for (long long grid : {1LL, 2LL, 5LL}) {
    std::fill(act_out.begin(), act_out.end(), -1.0f);
    std::fill(w_out.begin(), w_out.end(), -1.0f);
    launch(grid, [&] { gmm::emulated::lib::scale_layout_kernel(a); });
    for (int e = 0; e < E; ++e) {
      const long long n = off[e + 1] - off[e], base = lib::act_scale_base(off[e], kb, e);
      for (long long r = 0; r < n; ++r)
        for (int b = 0; b < kb; ++b)
          ASSERT_EQ(act_out[base + b * n + r], act[(off[e] + r) * kb + b]) << "grid " << grid << " e" << e << " r" << r;
      for (int j = 0; j < nb; ++j)
        for (int b = 0; b < kb; ++b)
          ASSERT_EQ(w_out[(e * nb + j) * kb_pad + b], w[(e * nb + j) * kb + b]) << "grid " << grid << " e" << e;
    }
  }
}

TEST(GmmLibraryPeers, TheRowKernelsScaleAndRoundOnlyTheExpertsRows) {
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int rows = 12, cols = 24, E = 3;
  const std::vector<std::int32_t> off = {0, 4, 4, 10};  // rows 10 and 11 are no expert's
  std::vector<float> rw(rows), f32(static_cast<std::size_t>(rows * cols));
  for (auto& v : rw) v = 0.1f + static_cast<float>(rng() % 90) / 100.0f;
  for (auto& v : f32) v = nd(rng);
  for (const bool bf16 : {true, false}) {
    std::vector<std::uint16_t> y(f32.size());
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = bf16 ? float_to_bf16(f32[i]) : float_to_f16(f32[i]);
    const std::vector<std::uint16_t> before = y;
    gmm::emulated::lib::RowsArgs a;
    a.y = y.data();
    a.row_weight = rw.data();
    a.offsets = off.data();
    a.rows = rows;
    a.cols = cols;
    a.experts = E;
    launch(2, [&] { bf16 ? gmm::emulated::lib::scale_rows_kernel<true>(a) : gmm::emulated::lib::scale_rows_kernel<false>(a); });
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        const float in = bf16 ? bf16_to_float(before[i]) : f16_to_float(before[i]);
        const std::uint16_t want = r < off[E] ? (bf16 ? float_to_bf16(in * rw[r]) : float_to_f16(in * rw[r])) : before[i];
        ASSERT_EQ(y[i], want) << (bf16 ? "bf16" : "f16") << " r" << r << " c" << c;
      }
  }
  // fp32 rows to bf16, times the routed weight when given, rounded once.
  for (const bool routed : {true, false}) {
    std::vector<std::uint16_t> y(f32.size(), 0x7FC1);
    gmm::emulated::lib::RowsArgs a;
    a.y = y.data();
    a.f32 = f32.data();
    a.row_weight = routed ? rw.data() : nullptr;
    a.offsets = off.data();
    a.rows = rows;
    a.cols = cols;
    a.experts = E;
    launch(1, [&] { gmm::emulated::lib::round_rows_kernel(a); });
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(r * cols + c);
        const std::uint16_t want = r < off[E] ? float_to_bf16(f32[i] * (routed ? rw[r] : 1.0f)) : std::uint16_t{0x7FC1};
        ASSERT_EQ(y[i], want) << "routed " << routed << " r" << r << " c" << c;
      }
  }
}

}  // namespace
}  // namespace moe
