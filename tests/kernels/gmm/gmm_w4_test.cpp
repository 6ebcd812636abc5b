// gmm with 4-bit weights (docs/w4.md): both dequantizers (the reference's and the cpu
// backend's) against values written out here, held out from either: every e2m1 code, e8m0
// exponents from the smallest to the largest, int4's nibble order, offset and zero points, the
// group boundaries; then the cpu backend against the reference on random problems (up and down,
// mxfp4 and int4 with and without zero points, poisoned outputs), changed codes caught,
// gpt-oss's expert function (clamped SwiGLU, interleaved w13, biases) by hand and at random,
// and the refusals (NaN scales, shapes, the cuda and emu backends' dense kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/w4_reference.hpp"
#include "gmm/detail.hpp"
#include "gmm/family.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "support/error_text.hpp"
#include "support/gmm_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::gmm_problem;
using testing::seeded;
using tuner::prepare;
using tuner::Prepared;
using tuner::run_cpu;

const FamilyDesc& F() { return gmm_family(); }

// e2m1 by code, from the OCP MX table: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
const double kE2m1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

// One mxfp4 row of K elements from its codes, through the cpu backend's dequantizer.
std::vector<float> cpu_mxfp4_row(const std::vector<std::uint8_t>& codes, const std::vector<std::uint8_t>& scales) {
  gmm::W4Rows w;
  w.wq = WeightFormat::mxfp4;
  w.K = static_cast<std::int64_t>(codes.size()) * 2;
  w.NW = 1;
  w.group = 32;
  w.codes = codes.data();
  w.scales = scales.data();
  std::vector<float> out(static_cast<std::size_t>(w.K + 8), 7.0f);
  gmm::w4_row_to_f32(w, 0, w.K + 8, out.data());
  return out;
}

TEST(W4Mxfp4, EveryE2m1CodeAndTheNibbleOrder) {
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(w4_reference::e2m1(c), kE2m1[c]) << "code " << c;
    EXPECT_EQ(std::signbit(w4_reference::e2m1(c)), c >= 8) << "code " << c;
  }
  // 32 elements: element 2i is code (2i) % 16 in the low nibble, 2i+1 code (2i+1) % 16 in the high one.
  std::vector<std::uint8_t> codes(16);
  for (int i = 0; i < 16; ++i) codes[i] = static_cast<std::uint8_t>(((2 * i) % 16) | (((2 * i + 1) % 16) << 4));
  const std::vector<std::uint8_t> one = {127};  // 2^0
  const auto cpu = cpu_mxfp4_row(codes, one);
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(w4_reference::mxfp4(codes.data(), one.data(), k), kE2m1[k % 16]) << k;
    EXPECT_EQ(cpu[k], static_cast<float>(kE2m1[k % 16])) << k;
    EXPECT_EQ(std::signbit(cpu[k]), k % 16 >= 8) << k;
  }
  for (int k = 32; k < 40; ++k) EXPECT_EQ(cpu[k], 0.0f) << "padding " << k;
}

TEST(W4Mxfp4, E8m0ExponentsFromEndToEnd) {
  for (unsigned e : {0u, 1u, 2u, 63u, 100u, 126u, 127u, 128u, 150u, 200u, 253u, 254u}) {
    EXPECT_EQ(w4_reference::e8m0(e), std::ldexp(1.0, static_cast<int>(e) - 127)) << e;
    // Two groups: codes 1 (0.5) and 7 (6) under this exponent, then 2 (1.0) under 2^0.
    std::vector<std::uint8_t> codes(32);
    for (int i = 0; i < 16; ++i) codes[i] = 0x71;
    for (int i = 16; i < 32; ++i) codes[i] = 0x22;
    const std::vector<std::uint8_t> scales = {static_cast<std::uint8_t>(e), 127};
    const auto cpu = cpu_mxfp4_row(codes, scales);
    for (int k = 0; k < 64; ++k) {
      const double ref = w4_reference::mxfp4(codes.data(), scales.data(), k);
      const double want = k >= 32 ? 1.0 : std::ldexp(k % 2 ? 6.0 : 0.5, static_cast<int>(e) - 127);
      EXPECT_EQ(ref, want) << "e " << e << " k " << k;
      // fp32 holds 0.5 * 2^-127 (a subnormal); 6 * 2^127 is past its largest finite value.
      const float f = want > std::numeric_limits<float>::max() ? std::numeric_limits<float>::infinity() : static_cast<float>(want);
      EXPECT_EQ(cpu[k], f) << "e " << e << " k " << k;
    }
  }
  EXPECT_TRUE(std::isnan(w4_reference::e8m0(255)));
}

// int4 rows: eight codes per int32 along K, the first in the lowest bits.
struct Int4Row {
  std::vector<std::int32_t> words;
  std::vector<std::uint16_t> scales;
  std::vector<std::int32_t> zeros;  // [NW/8, G] when given
};

Int4Row pack_int4(const std::vector<unsigned>& codes, const std::vector<float>& scales) {
  Int4Row r;
  r.words.assign(codes.size() / 8, 0);
  for (std::size_t k = 0; k < codes.size(); ++k)
    r.words[k / 8] = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.words[k / 8]) | (codes[k] << (4 * (k % 8))));
  for (float s : scales) r.scales.push_back(float_to_bf16(s));
  return r;
}

TEST(W4Int4, NibbleOrderSignAndGroupBoundaries) {
  for (std::int64_t group : {32, 128}) {
    const std::int64_t K = 2 * group;
    std::vector<unsigned> codes(static_cast<std::size_t>(K));
    for (std::int64_t k = 0; k < K; ++k) codes[k] = static_cast<unsigned>((k * 7 + 3) % 16);
    const Int4Row row = pack_int4(codes, {0.5f, -3.0f});
    // The first word holds elements 0..7: element 0 in bits 0..3.
    EXPECT_EQ(static_cast<std::uint32_t>(row.words[0]) & 0xF, 3u);
    EXPECT_EQ(static_cast<std::uint32_t>(row.words[0]) >> 28, static_cast<unsigned>((7 * 7 + 3) % 16));
    gmm::W4Rows w;
    w.wq = WeightFormat::int4;
    w.K = K;
    w.NW = 1;
    w.group = group;
    w.codes = row.words.data();
    w.scales = row.scales.data();
    std::vector<float> cpu(static_cast<std::size_t>(K));
    gmm::w4_row_to_f32(w, 0, K, cpu.data());
    for (std::int64_t k = 0; k < K; ++k) {
      // Symmetric: the code less 8 (compressed-tensors' offset), times its own group's scale.
      const double want = (static_cast<double>(codes[k]) - 8.0) * (k < group ? 0.5 : -3.0);
      EXPECT_EQ(w4_reference::nibble(row.words.data(), k), codes[k]) << k;
      EXPECT_EQ(w4_reference::int4(codes[k], 8, row.scales[k / group]), want) << k;
      EXPECT_EQ(cpu[k], static_cast<float>(want)) << "group " << group << " k " << k;
    }
  }
}

TEST(W4Int4, ZeroPointsPackedEightRowsAWord) {
  // 16 weight rows (two zero words per group), 2 groups of 32: row n, group g has zero (n + 5g) % 16.
  const std::int64_t NW = 16, K = 64, G = 2;
  std::vector<std::int32_t> words(static_cast<std::size_t>(NW * K / 8));
  std::vector<std::uint16_t> scales(static_cast<std::size_t>(NW * G));
  std::vector<std::int32_t> zeros(static_cast<std::size_t>(NW / 8 * G), 0);
  std::vector<unsigned> codes(static_cast<std::size_t>(NW * K));
  for (std::int64_t n = 0; n < NW; ++n) {
    for (std::int64_t k = 0; k < K; ++k) codes[n * K + k] = static_cast<unsigned>((n * 3 + k) % 16);
    for (std::int64_t g = 0; g < G; ++g) {
      scales[n * G + g] = float_to_bf16(0.25f * static_cast<float>(n + 1 + g));
      auto& z = zeros[(n / 8) * G + g];
      z = static_cast<std::int32_t>(static_cast<std::uint32_t>(z) | (static_cast<std::uint32_t>((n + 5 * g) % 16) << (4 * (n % 8))));
    }
    for (std::int64_t k = 0; k < K; ++k)
      words[(n * K + k) / 8] = static_cast<std::int32_t>(static_cast<std::uint32_t>(words[(n * K + k) / 8]) | (codes[n * K + k] << (4 * (k % 8))));
  }
  gmm::W4Rows w;
  w.wq = WeightFormat::int4;
  w.K = K;
  w.NW = NW;
  w.group = 32;
  w.codes = words.data();
  w.scales = scales.data();
  w.zeros = zeros.data();
  std::vector<float> cpu(static_cast<std::size_t>(K));
  for (std::int64_t n = 0; n < NW; ++n) {
    gmm::w4_row_to_f32(w, n, K, cpu.data());
    for (std::int64_t k = 0; k < K; ++k) {
      const std::int64_t g = k / 32;
      const double want = (static_cast<double>(codes[n * K + k]) - static_cast<double>((n + 5 * g) % 16)) * 0.25 * static_cast<double>(n + 1 + g);
      EXPECT_EQ(w4_reference::nibble(zeros.data() + (n / 8) * G + g, n % 8), static_cast<unsigned>((n + 5 * g) % 16));
      EXPECT_EQ(cpu[k], static_cast<float>(want)) << "row " << n << " k " << k;
    }
  }
}

Params w4_problem(const std::string& dtype, const std::string& stage, std::int64_t group = 128, bool zp = false) {
  // 12 tokens over 8 experts: some experts get no rows, align 16 pads the others.
  Params p = gmm_problem(12, 8, 2, 0, 256, 128, 16, stage, dtype);
  if (dtype == "int4") p.set("group", group).set("zero_point", std::int64_t{zp ? 1 : 0});
  if (stage == "down") p.set("routed_weight", std::int64_t{1});
  return p;
}

struct Case {
  const char* dtype;
  std::int64_t group;
  bool zp;
};
const Case kCases[] = {{"mxfp4", 32, false}, {"int4", 32, false}, {"int4", 128, true}, {"int4", 128, false}};

TEST(W4GmmCpu, EveryConfigMatchesTheReference) {
  for (const Case& c : kCases)
    for (const char* stage : {"up", "down"}) {
      const Prepared p = prepare(F(), w4_problem(c.dtype, stage, c.group, c.zp), seeded(7));
      const GmmSpec s = GmmSpec::parse(p.problem);
      EXPECT_EQ(p.inputs.at(s.weight_name()).dtype(), c.dtype == std::string("mxfp4") ? DType::u8 : DType::i32);
      EXPECT_EQ(p.inputs.count(s.weight_zero_name()), c.zp ? 1u : 0u);
      const auto space = F().need_backend(Backend::cpu).space(p.problem, DeviceInfo{}, false);
      ASSERT_FALSE(space.empty());
      for (const Params& cfg : space) {
        const auto o = run_cpu(p, cfg, 2);
        EXPECT_TRUE(o.validation.ok) << c.dtype << " g" << c.group << " zp" << c.zp << " " << stage << " " << cfg.str() << ": "
                                     << o.validation.summary();
      }
    }
}

// Random scales: the generated weights' scales spread over decades (mxfp4: many exponents).
TEST(W4GmmCpu, GeneratedScalesSpread) {
  const Prepared p = prepare(F(), w4_problem("mxfp4", "up"), seeded(3));
  const Tensor& e = p.inputs.at("w13_scale");
  int lo = 255, hi = 0;
  for (std::int64_t i = 0; i < e.numel(); ++i) {
    lo = std::min<int>(lo, e.data<std::uint8_t>()[i]);
    hi = std::max<int>(hi, e.data<std::uint8_t>()[i]);
  }
  EXPECT_GE(hi - lo, 10) << lo << ".." << hi;
}

// The cpu backend reads the packed weights it is given: change every code (both nibbles of
// every byte) after the reference was made and its result must be refused.
TEST(W4GmmCpu, ChangedCodesAreCaught) {
  for (const Case& c : kCases) {
    Prepared p = prepare(F(), w4_problem(c.dtype, "up", c.group, c.zp), seeded(11));
    const GmmSpec s = GmmSpec::parse(p.problem);
    Tensor& w = p.inputs.at(s.weight_name());
    auto* bytes = static_cast<std::uint8_t*>(w.raw());
    for (std::size_t i = 0; i < w.nbytes(); ++i) bytes[i] ^= 0x77;
    const auto o = run_cpu(p, F().need_backend(Backend::cpu).default_config(p.problem, DeviceInfo{}), 2);
    EXPECT_FALSE(o.validation.ok) << c.dtype;
  }
}

// ---- gpt-oss's expert function on 4-bit weights

using testing::bf16_tensor;
double bf16(double v) { return testing::bf16_rounded(v); }

Params cpu_cfg(std::int64_t bm, std::int64_t bn, std::int64_t bk) {
  return Params().set("block_m", bm).set("block_n", bn).set("block_k", bk);
}

TEST(W4GmmExpertFn, Mxfp4InterleavedClampedSwigluWithBiasesByHand) {
  // One token, x = 32 ones (one e8m0 group); w13 interleaved by single rows, every code of a row
  // the same. Even columns: gate 1.0 x 2^-3 -> 4, + 0.5 = 4.5; up 0.5 x 2^-1 -> 8, - 0.5 = 7.5,
  // clamped to 7: 8 * 4.5 * sigmoid(1.702 * 4.5). Odd columns: gate -1.0 x 2^-5 -> -1, - 0.25 =
  // -1.25; up -6 x 2^-2 -> -48, + 1 = -47, clamped to -7: -6 * -1.25 * sigmoid(1.702 * -1.25).
  const std::int64_t I = 32, K = 32;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(2 * I * K / 2)), scales(static_cast<std::size_t>(2 * I));
  std::vector<double> bias(static_cast<std::size_t>(2 * I));
  const std::uint8_t row_code[4] = {0x22, 0x11, 0xAA, 0xFF};
  const std::uint8_t row_e8[4] = {124, 126, 122, 125};
  const double row_bias[4] = {0.5, -0.5, -0.25, 1.0};
  for (std::int64_t r = 0; r < 2 * I; ++r) {
    const std::size_t kind = static_cast<std::size_t>(r % 4);  // gate even, up even, gate odd, up odd
    for (std::int64_t b = 0; b < K / 2; ++b) codes[static_cast<std::size_t>(r * K / 2 + b)] = row_code[kind];
    scales[static_cast<std::size_t>(r)] = row_e8[kind];
    bias[static_cast<std::size_t>(r)] = row_bias[kind];
  }
  TensorMap given;
  given["offsets"] = testing::i32_tensor({0, 1});
  given["x_sorted"] = bf16_tensor({1, K}, std::vector<double>(static_cast<std::size_t>(K), 1.0));
  Tensor w(DType::u8, {1, 2 * I, K / 2}), sc(DType::u8, {1, 2 * I, 1});
  std::copy(codes.begin(), codes.end(), w.data<std::uint8_t>());
  std::copy(scales.begin(), scales.end(), sc.data<std::uint8_t>());
  given["w13"] = w;
  given["w13_scale"] = sc;
  given["bias13"] = bf16_tensor({1, 2 * I}, bias);
  Params pr = gmm_problem(1, 1, 1, 0, K, I, 1, "up", "mxfp4");
  pr.set("activation", std::string("swiglu_oai")).set("alpha", 1.702).set("limit", 7.0);
  pr.set("w13_layout", std::string("interleaved")).set("w13_block", std::int64_t{1}).set("bias13", std::int64_t{1});
  const Prepared p = prepare(F(), pr, seeded(1), given);
  const auto o = run_cpu(p, cpu_cfg(8, 16, 64), 1);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  const double even = 35.983023966593485, odd = 6 * 1.25 / (1 + std::exp(1.702 * 1.25));
  for (std::int64_t j = 0; j < I; ++j) {
    EXPECT_EQ(p.reference.at("h").get(j), bf16(j % 2 ? odd : even)) << "reference column " << j;
    EXPECT_EQ(o.outputs.at("h").get(j), bf16(j % 2 ? odd : even)) << "cpu column " << j;
  }
}

TEST(W4GmmExpertFn, Int4ZeroPointsBias2AndTheRoutedWeightByHand) {
  // h = 32 halves; w2 row n holds code n % 16 throughout, zero point 3, scale 0.25: the sum is
  // 32 * 0.5 * (n % 16 - 3) * 0.25 = 4 * (n % 16 - 3); + bias2 n / 8, then times 0.5.
  const std::int64_t D = 32, I = 32;
  Tensor w(DType::i32, {1, D, I / 8}), sc(DType::bf16, {1, D, 1}), z(DType::i32, {1, D / 8, 1});
  std::vector<double> b2(static_cast<std::size_t>(D));
  for (std::int64_t n = 0; n < D; ++n) {
    const std::uint32_t q = static_cast<std::uint32_t>(n % 16);
    std::uint32_t word = 0;
    for (int j = 0; j < 8; ++j) word |= q << (4 * j);
    for (std::int64_t i = 0; i < I / 8; ++i) w.data<std::int32_t>()[n * (I / 8) + i] = static_cast<std::int32_t>(word);
    sc.set(n, 0.25);
    b2[static_cast<std::size_t>(n)] = static_cast<double>(n) / 8;
  }
  for (std::int64_t i = 0; i < D / 8; ++i) z.data<std::int32_t>()[i] = 0x33333333;
  TensorMap given;
  given["offsets"] = testing::i32_tensor({0, 1});
  given["h"] = bf16_tensor({1, I}, std::vector<double>(static_cast<std::size_t>(I), 0.5));
  given["w2"] = w;
  given["w2_scale"] = sc;
  given["w2_zero"] = z;
  given["bias2"] = bf16_tensor({1, D}, b2);
  Tensor rw(DType::f32, {1});
  rw.set(0, 0.5);
  given["row_weight"] = rw;
  Params pr = gmm_problem(1, 1, 1, 0, D, I, 1, "down", "int4");
  pr.set("group", std::int64_t{32}).set("zero_point", std::int64_t{1}).set("routed_weight", std::int64_t{1});
  pr.set("bias2", std::int64_t{1});
  const Prepared p = prepare(F(), pr, seeded(1), given);
  const auto o = run_cpu(p, cpu_cfg(8, 16, 64), 1);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  for (std::int64_t n = 0; n < D; ++n) {
    const double want = bf16(0.5 * (4.0 * static_cast<double>(n % 16 - 3) + static_cast<double>(n) / 8));
    EXPECT_EQ(p.reference.at("y_sorted").get(n), want) << "reference row " << n;
    EXPECT_EQ(o.outputs.at("y_sorted").get(n), want) << "cpu row " << n;
  }
}

// Random problems through gpt-oss's function on every 4-bit format: interleaved and split w13,
// limits that clamp often (1) and rarely (7), biases on both stages, hidden 2880 (not a multiple
// of 128) where the group allows it. Every row is referenced and every cpu config checked.
TEST(W4GmmExpertFn, CpuMatchesTheReferenceOnEveryFormat) {
  int checked = 0;
  for (const Case& c : kCases) {
    const std::int64_t D = c.group == 32 ? 2880 : 256, I = c.group == 32 ? 64 : 128;
    for (const char* layout : {"split", "interleaved"})
      for (double limit : {7.0, 1.0}) {
        Params pr = gmm_problem(6, 4, 2, 0, D, I, 8, "up", c.dtype);
        if (std::string(c.dtype) == "int4") pr.set("group", c.group).set("zero_point", std::int64_t{c.zp ? 1 : 0});
        pr.set("activation", std::string("swiglu_oai")).set("alpha", 1.702).set("limit", limit);
        pr.set("w13_layout", std::string(layout)).set("w13_block", std::int64_t{std::string(layout) == "split" ? 1 : 8});
        pr.set("bias13", std::int64_t{1});
        const Prepared p = prepare(F(), pr, seeded(static_cast<std::uint64_t>(31 + checked)));
        for (const Params& cfg : F().need_backend(Backend::cpu).space(p.problem, DeviceInfo{}, false)) {
          const auto o = run_cpu(p, cfg, 2);
          EXPECT_TRUE(o.validation.ok) << pr.str() << " " << cfg.str() << ": " << o.validation.summary();
        }
        ++checked;
      }
    Params pd = gmm_problem(6, 4, 2, 0, D, I, 8, "down", c.dtype);
    if (std::string(c.dtype) == "int4") pd.set("group", c.group).set("zero_point", std::int64_t{c.zp ? 1 : 0});
    pd.set("bias2", std::int64_t{1}).set("routed_weight", std::int64_t{1});
    const Prepared q = prepare(F(), pd, seeded(static_cast<std::uint64_t>(90 + checked)));
    const auto o = run_cpu(q, F().need_backend(Backend::cpu).default_config(q.problem, DeviceInfo{}), 2);
    EXPECT_TRUE(o.validation.ok) << pd.str() << ": " << o.validation.summary();
  }
  EXPECT_EQ(checked, 16);
}

using testing::error_of;

TEST(W4GmmProblem, RefusesBadScalesShapesAndTheDeviceBackends) {
  // An e8m0 NaN scale, an int4 infinite scale: refused naming the tensor.
  Prepared mx = prepare(F(), w4_problem("mxfp4", "up"), seeded(1));
  TensorMap given = mx.inputs;
  given.at("w13_scale").data<std::uint8_t>()[5] = 255;
  std::string e = error_of([&] { prepare(F(), mx.problem, seeded(1), given); });
  EXPECT_NE(e.find("w13_scale holds the e8m0 NaN code 255 at flat index 5"), std::string::npos) << e;
  Prepared i4 = prepare(F(), w4_problem("int4", "down", 32), seeded(1));
  given = i4.inputs;
  given.at("w2_scale").data<std::uint16_t>()[2] = 0x7F80;
  e = error_of([&] { prepare(F(), i4.problem, seeded(1), given); });
  EXPECT_NE(e.find("w2_scale at flat index 2"), std::string::npos) << e;
  // Weights without their scales.
  given = i4.inputs;
  given.erase("w2_scale");
  e = error_of([&] { prepare(F(), i4.problem, seeded(1), given); });
  EXPECT_NE(e.find("w2 was given without w2_scale"), std::string::npos) << e;

  auto check = [](const Params& p) { F().check_problem(complete(F().problem_params, p, "gmm")); };
  Params odd = gmm_problem(4, 4, 2, 0, 2880, 360, 8, "up", "mxfp4");
  e = error_of([&] { check(odd); });
  EXPECT_NE(e.find("intermediate (per TP shard) to be a multiple of 32, got 360"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] { check(gmm_problem(4, 4, 2, 0, 2880, 2880, 8, "up", "mxfp4")); }), "");
  e = error_of([&] { check(Params(w4_problem("int4", "up")).set("group", std::int64_t{64})); });
  EXPECT_NE(e.find("int4 takes group=32 or group=128"), std::string::npos) << e;
  e = error_of([&] { check(Params(w4_problem("int4", "up")).set("hidden", std::int64_t{320})); });
  EXPECT_NE(e.find("hidden to be a multiple of 128, got 320"), std::string::npos) << e;
  EXPECT_NE(e.find("group=32"), std::string::npos) << e;

  for (Backend b : {Backend::cuda, Backend::emu}) {
    const BackendImpl* impl = F().backend(b);
    if (!impl) continue;
    for (const char* dt : {"mxfp4", "int4"}) {
      const Params p = complete(F().problem_params, w4_problem(dt, "up"), "gmm");
      // The 4-bit decode kernel (kernel=mma) runs them; kernel=wgmma reads dense weights.
      Params cfg = impl->default_config(p, DeviceInfo{});
      EXPECT_EQ(impl->invalid_reason(p, cfg, DeviceInfo{}), "") << dt;
      EXPECT_FALSE(impl->space(p, DeviceInfo{}, true).empty()) << dt;
      cfg.set("kernel", std::string("wgmma"));
      const std::string why = impl->invalid_reason(p, cfg, DeviceInfo{});
      EXPECT_NE(why.find(std::string("dtype ") + dt + " runs on kernel=mma"), std::string::npos) << why;
    }
  }
}

TEST(W4GmmProblem, TheAliasAndTheTableKeys) {
  EXPECT_EQ(std::get<std::string>(parse_value(*F().problem_param("dtype"), "w4a16")), "int4");
  // int4's group and zero points key its tables; for other dtypes they are not part of the key.
  const Params a = complete(F().problem_params, w4_problem("int4", "up", 32), "gmm");
  const Params b = complete(F().problem_params, w4_problem("int4", "up", 128), "gmm");
  EXPECT_NE(runtime::problem_key(a), runtime::problem_key(b));
  Params bf = a, bf2 = b;
  bf.set("dtype", std::string("bf16"));
  bf2.set("dtype", std::string("bf16"));
  EXPECT_EQ(runtime::problem_key(bf), runtime::problem_key(bf2));
  EXPECT_EQ(runtime::problem_key(bf).find("group"), std::string::npos) << runtime::problem_key(bf);
}

}  // namespace
}  // namespace moe
