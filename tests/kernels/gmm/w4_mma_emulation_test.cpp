// The 4-bit decode kernel (kernels/gmm/w4_mma/) on the cpu under the simt emulator, by the emu
// backend's path, against the fp64 reference (docs/w4.md): the register dequantizers code by
// code against values written out here; then every config of the space for mxfp4 and int4
// (groups 32 and 128, with and without zero points), up and down (the routed weight), split-K
// whose splits end inside a group, shapes that are multiples of 32 but not of 64 or 128, 1 to
// 16 tokens, persistent CTAs walking several tiles, outputs NaN-poisoned before each run; and
// the configs it refuses, each with its reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/family.hpp"
#include "gmm/w4_mma/w4_mma_configs.hpp"
#include "gmm/w4_mma/w4_mma_kernel.cuh"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using gmm::cuda::Config;
using gmm::cuda::TileShape;
using testing::gmm_problem;
using testing::i32_tensor;

// e2m1 by code (the OCP MX table).
const float kE2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

float bf16_half(std::uint32_t v, int h) {
  const std::uint32_t bits = (v >> (16 * h) & 0xFFFFu) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(GmmW4MmaEmulation, RegisterDequantizersCodeByCode) {
  // Word i holds codes c, c+1, ..., c+7 (mod 16) from its lowest nibble up: element 2p of the
  // word is byte p's low nibble and must land in pair p's low half.
  for (unsigned c0 = 0; c0 < 16; ++c0) {
    std::uint32_t w = 0;
    for (unsigned k = 0; k < 8; ++k) w |= ((c0 + k) % 16) << (4 * k);
    std::uint32_t b[4];
    gmm::emulated::w4::mxfp4x8(w, b);
    for (int k = 0; k < 8; ++k) {
      const unsigned code = (c0 + k) % 16;
      const float v = bf16_half(b[k / 2], k % 2);
      EXPECT_EQ(v, kE2m1[code]) << "mxfp4 code " << code;
      EXPECT_EQ(std::signbit(v), code >= 8) << "mxfp4 code " << code;
    }
    for (unsigned z = 0; z < 16; ++z) {
      gmm::emulated::w4::int4x8(w, ((0x4300u | z) * 0x10001u) | 0x80008000u, b);
      for (int k = 0; k < 8; ++k)
        EXPECT_EQ(bf16_half(b[k / 2], k % 2), static_cast<float>(static_cast<int>((c0 + k) % 16) - static_cast<int>(z)))
            << "int4 q " << (c0 + k) % 16 << " z " << z;
    }
  }
  EXPECT_EQ(gmm::emulated::w4::e8m0_f32(127), 1.0f);
  EXPECT_EQ(gmm::emulated::w4::e8m0_f32(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(gmm::emulated::w4::e8m0_f32(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(gmm::emulated::w4::bf16_f32(0xC0A0), -5.0f);
}

tuner::Prepared prep(const Params& pr, TensorMap given = {}, std::uint64_t seed = 1) {
  InputOptions o;
  o.seed = seed;
  return tuner::prepare(gmm_family(), pr, o, std::move(given));
}

Params w4(const std::string& dtype, std::int64_t group, bool zp, std::int64_t T, std::int64_t E, std::int64_t D,
          std::int64_t I, std::int64_t A, const std::string& stage) {
  Params p = gmm_problem(T, E, 2, 0, D, I, A, stage, dtype);
  if (dtype == "int4") p.set("group", group).set("zero_point", std::int64_t{zp ? 1 : 0});
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return p;
}

// Empty when the emulated config's output, on poisoned buffers, passes the family's validation.
std::string check(const tuner::Prepared& p, const Config& c, long long max_ctas) {
  const GmmSpec s = GmmSpec::parse(p.problem);
  const std::string what = p.problem.s("dtype") + " g" + std::to_string(s.group) + (s.zero_point ? " zp" : "") + " " +
                           (s.down ? "down" : "up") + " T=" + std::to_string(s.tokens) + " tile " +
                           std::to_string(c.shape.bm) + "x" + std::to_string(c.shape.bn) + "x" + std::to_string(c.shape.bk) +
                           " split " + std::to_string(c.split) + " ctas<=" + std::to_string(max_ctas) + ": ";
  TensorMap out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  std::vector<std::byte> ws(gmm::w4_mma::workspace_bytes(s, c), std::byte{0xFF});  // NaN until written
  try {
    gmm::emu::run_w4_mma(s, c, refs(const_cast<TensorMap&>(p.inputs)), refs(out), ws.data(), ws.size(), max_ctas);
  } catch (const EmuFault& e) {
    return what + e.what() + "\n";
  }
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : what + v.summary() + "\n";
}

struct Format {
  const char* dtype;
  std::int64_t group;
  bool zp;
};
const Format kFormats[] = {{"mxfp4", 32, false}, {"int4", 32, false}, {"int4", 32, true}, {"int4", 128, false}, {"int4", 128, true}};

TEST(GmmW4MmaEmulation, EveryBuiltShapeIsEmulated) {
  const auto built = gmm::w4_mma::tiles(), emulated = gmm::emu::emulated_w4_tiles();
  ASSERT_EQ(built.size(), emulated.size());
  for (std::size_t i = 0; i < built.size(); ++i) EXPECT_TRUE(built[i] == emulated[i]) << i;
}

TEST(GmmW4MmaEmulation, EveryConfigBothFormatsAndStages) {
  // 12 tokens over 8 experts, align 16: experts without rows, padding rows. Up: K = 256 (two
  // slices of 128, eight of 32: splits of 8 end inside int4's 128-groups), I = 128; down: K =
  // 128, D = 256 (a 128-row tile, a 256-row one overhanging nothing).
  for (const Format& f : kFormats)
    for (const char* stage : {"up", "down"}) {
      const auto p = prep(w4(f.dtype, f.group, f.zp, 12, 8, 256, 128, 16, stage), {}, 7);
      const GmmSpec s = GmmSpec::parse(p.problem);
      const auto space = gmm::w4_mma::space(s, emu_device_info(), true);
      // Every tile: splits 1,2 for block_k 128 (up; down 1), 1..8 where K has the slices.
      ASSERT_GE(space.size(), 8u) << f.dtype << " " << stage;
      std::string fails;
      for (const Config& c : space) fails += check(p, c, 3);
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

TEST(GmmW4MmaEmulation, DecodeTokensSplitKAndMultiplesOf32) {
  // hidden 160 and intermediate 96: multiples of 32 only, which the 32-wide tile alone runs
  // (the others are refused, saying why); align 1, 1 to 16 tokens over 4 experts; split-K up
  // to 5 (K = 160) and 3 (K = 96) slices. int4 takes group 32 here (160 is not a multiple of 128).
  for (std::int64_t T : {1, 2, 5, 16})
    for (const Format& f : kFormats) {
      if (f.group != 32) continue;
      for (const char* stage : {"up", "down"}) {
        const auto p = prep(w4(f.dtype, 32, f.zp, T, 4, 160, 96, 1, stage), {}, 100 + T);
        const GmmSpec s = GmmSpec::parse(p.problem);
        std::string fails;
        int ran = 0;
        for (auto& t : gmm::w4_mma::tiles())
          for (int split : {1, 2, 4, 8}) {
            const Config c{t, split, 1};
            const std::string why = gmm::w4_mma::invalid_reason(s, c, emu_device_info());
            if (!why.empty()) {
              EXPECT_TRUE(t.bk > 32 || split > s.k_dim() / 32) << why;
              if (t.bk > 32) EXPECT_NE(why.find("multiple of " + std::to_string(t.bk)), std::string::npos) << why;
              continue;
            }
            fails += check(p, c, split == 2 ? 1 : 1 << 20);
            ++ran;
          }
        EXPECT_TRUE(fails.empty()) << fails;
        EXPECT_EQ(ran, s.down ? 2 : 3) << stage;  // the 32-wide tile at splits 1, 2 (and 4 for K = 160)
      }
    }
}

TEST(GmmW4MmaEmulation, RaggedSegmentsAndPlantedValues) {
  // Segments of 0, 1, 17 and 33 rows end inside M tiles; weight codes of expert 2 are all +-6 at
  // the largest scale of the group, and one activation row holds a NaN, which must reach its
  // output row (and no other).
  TensorMap given;
  given["offsets"] = i32_tensor({0, 0, 1, 18, 51});
  for (const char* dt : {"mxfp4", "int4"})
    for (const char* stage : {"up", "down"}) {
      const bool up = std::string(stage) == "up";
      const auto base = prep(w4(dt, 128, false, 51, 4, up ? 384 : 256, up ? 128 : 384, 1, stage), given, 11);
      const GmmSpec s = GmmSpec::parse(base.problem);
      TensorMap in = base.inputs;
      auto* codes = in.at(s.weight_name()).data<std::uint8_t>();
      const std::int64_t per = s.n_w() * s.k_dim() / 2;
      for (std::int64_t i = 0; i < per; ++i) codes[2 * per + i] = i % 3 ? 0x77 : 0xF7;
      in.at(s.act_name()).data<std::uint16_t>()[20 * s.k_dim() + 5] = 0x7FC0;
      const auto p = prep(base.problem, in, 11);
      std::string fails;
      for (auto& c : gmm::w4_mma::space(s, emu_device_info(), true)) fails += check(p, c, c.split == 2 ? 1 : 1 << 20);
      EXPECT_TRUE(fails.empty()) << fails;
      TensorMap out = allocate(p.output_specs);
      const Config c = gmm::w4_mma::default_config(s, emu_device_info());
      std::vector<std::byte> ws(gmm::w4_mma::workspace_bytes(s, c));
      gmm::emu::run_w4_mma(s, c, refs(const_cast<TensorMap&>(p.inputs)), refs(out), ws.data(), ws.size());
      EXPECT_TRUE(std::isnan(out.at(s.out_name()).get(20 * s.n_out()))) << dt << " " << stage;
      EXPECT_FALSE(std::isnan(out.at(s.out_name()).get(19 * s.n_out()))) << dt << " " << stage;
    }
}

// The prefill tiles over segments longer than one and two of their tiles (150, 0, 140 and 10
// rows): the tile map's M-tiles, masked segment ends inside a tile, a few CTAs walking them all.
TEST(GmmW4MmaEmulation, PrefillTilesOverLongSegments) {
  TensorMap given;
  given["offsets"] = i32_tensor({0, 150, 150, 290, 300});
  for (const Format& f : {kFormats[0], kFormats[4]})
    for (const char* stage : {"up", "down"}) {
      const auto p = prep(w4(f.dtype, f.group, f.zp, 300, 4, 256, 128, 1, stage), given, 21);
      const GmmSpec s = GmmSpec::parse(p.problem);
      std::string fails;
      int ran = 0;
      for (const Config& c : gmm::w4_mma::space(s, emu_device_info(), true)) {
        if (c.shape.bm <= 32) continue;
        fails += check(p, c, 5);
        ++ran;
      }
      EXPECT_EQ(ran, 2) << f.dtype << " " << stage;
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

// gpt-oss's expert function in the kernel's FN instantiation: w13's gate and up rows interleaved
// one by one (gpt-oss) or in blocks of 4, or split with biases; the clamped SwiGLU with a limit
// the random sums cross both ways; bias13 and bias2 (with the routed weight); every config of
// the space, split-K's finalize included, padding rows (align 16) left exactly zero.
TEST(GmmW4MmaEmulation, GptOssExpertFunctionEveryConfig) {
  struct Layout {
    const char* name;
    std::int64_t block;
  };
  const Layout layouts[] = {{"interleaved", 1}, {"interleaved", 4}, {"split", 1}};
  for (const Format& f : {kFormats[0], kFormats[2]})
    for (const Layout& l : layouts)
      for (const char* stage : {"up", "down"})
        for (std::int64_t T : {1, 12}) {
          if (T == 1 && l.block != 1) continue;  // one token: gpt-oss's own layout alone
          Params pr = w4(f.dtype, f.group, f.zp, T, 8, 256, 128, 16, stage);
          pr.set("activation", std::string("swiglu_oai")).set("limit", 0.75).set("alpha", 1.5);
          pr.set("w13_layout", std::string(l.name)).set("w13_block", l.block);
          pr.set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
          const auto p = prep(pr, {}, 31 + T);
          const GmmSpec s = GmmSpec::parse(p.problem);
          ASSERT_FALSE(s.plain_expert_fn());
          const auto space = gmm::w4_mma::space(s, emu_device_info(), true);
          ASSERT_GE(space.size(), 8u) << f.dtype << " " << stage;
          std::string fails;
          for (const Config& c : space) {
            // The prefill tiles (64, 128 rows): gpt-oss's own format and layout at T=12 (their plain
            // instantiations run every format in EveryConfigBothFormatsAndStages).
            if (c.shape.bm > 32 && (T == 1 || l.block != 1 || std::string(f.dtype) != "mxfp4")) continue;
            fails += check(p, c, T == 1 ? 1 << 20 : 3);
          }
          EXPECT_TRUE(fails.empty()) << l.name << " " << l.block << ":\n" << fails;
        }
}

TEST(GmmW4MmaEmulation, RefusalsSayWhy) {
  const auto dev = emu_device_info();
  const GmmSpec up = GmmSpec::parse(complete(gmm_family().problem_params, w4("mxfp4", 32, false, 4, 8, 256, 96, 1, "up"), "gmm"));
  // I = 96 is not a multiple of 64 h columns: block_n 128 tiles are refused for up.
  std::string why = gmm::w4_mma::invalid_reason(up, Config{{16, 128, 64, 1, 4, 4}, 1, 1}, dev);
  EXPECT_NE(why.find("needs I (96) to be a multiple of 64"), std::string::npos) << why;
  why = gmm::w4_mma::invalid_reason(up, Config{{16, 64, 32, 1, 4, 4}, 3, 1}, dev);
  EXPECT_NE(why.find("split_k must be one of 1,2,4,8"), std::string::npos) << why;
  why = gmm::w4_mma::invalid_reason(up, Config{{16, 64, 32, 1, 4, 4}, 1, 4}, dev);
  EXPECT_NE(why.find("group_m must be 1"), std::string::npos) << why;
  why = gmm::w4_mma::invalid_reason(up, Config{{64, 128, 64, 2, 2, 3}, 1, 1}, dev);
  EXPECT_NE(why.find("no kernel with"), std::string::npos) << why;
  // The kernel maps interleaved rows with a mask: a block that is not a power of two is refused.
  Params il = w4("mxfp4", 32, false, 4, 8, 256, 96, 1, "up");
  il.set("w13_layout", std::string("interleaved")).set("w13_block", std::int64_t{3});
  const GmmSpec o = GmmSpec::parse(complete(gmm_family().problem_params, il, "gmm"));
  why = gmm::w4_mma::invalid_reason(o, gmm::w4_mma::default_config(o, dev), dev);
  EXPECT_NE(why.find("w13_block=3"), std::string::npos) << why;
  EXPECT_NE(why.find("power of two"), std::string::npos) << why;
  // Through the backend: kernel=wgmma reads dense weights.
  const BackendImpl& cuda = gmm_family().need_backend(Backend::cuda);
  const Params prob = complete(gmm_family().problem_params, w4("int4", 32, true, 4, 8, 256, 128, 1, "down"), "gmm");
  Params cfg = cuda.default_config(prob, dev);
  EXPECT_EQ(cuda.invalid_reason(prob, cfg, dev), "");
  cfg.set("kernel", std::string("wgmma"));
  why = cuda.invalid_reason(prob, cfg, dev);
  EXPECT_NE(why.find("runs on kernel=mma (the 4-bit decode kernel) only"), std::string::npos) << why;
}

}  // namespace
}  // namespace moe
