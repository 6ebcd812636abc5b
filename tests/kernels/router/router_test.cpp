// Router family: the reference pinned on hand-computed cases, validation's near-tie rules,
// the cpu backend against the reference on every config, and the cuda config space.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/validate.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "router/cuda.hpp"
#include "router/cuda_shapes.hpp"
#include "router/reference.hpp"
#include "support/router_cases.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
using router_cases::problem;
using router_cases::with;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

float sigm(double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); }

struct Routed {
  std::vector<int> ids;
  std::vector<float> weights;
};

// The reference on one hand-written row (f32 logits).
Routed reference_row(Params p, const std::vector<float>& logits, const std::vector<float>& bias = {}) {
  p = with(p, 1, "f32");
  TensorMap given;
  Tensor l(DType::f32, {1, static_cast<std::int64_t>(logits.size())});
  for (std::size_t i = 0; i < logits.size(); ++i) l.data<float>()[i] = logits[i];
  given.emplace("logits", std::move(l));
  if (!bias.empty()) {
    Tensor b(DType::f32, {static_cast<std::int64_t>(bias.size())});
    for (std::size_t i = 0; i < bias.size(); ++i) b.data<float>()[i] = bias[i];
    given.emplace("bias", std::move(b));
  }
  const auto prep = tuner::prepare(router_family(), p, InputOptions{}, given);
  Routed r;
  const auto& ids = prep.reference.at("ids");
  const auto& w = prep.reference.at("weights");
  for (std::int64_t j = 0; j < ids.numel(); ++j) {
    r.ids.push_back(ids.data<std::int32_t>()[j]);
    r.weights.push_back(w.data<float>()[j]);
  }
  return r;
}

void expect_weights(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * std::max(1.0, std::fabs(want[j]))) << "slot " << j;
}

// ---- the reference, by hand ----------------------------------------------------------------

TEST(RouterReference, SoftmaxTop2Renormalized) {
  const auto r = reference_row(problem(4, 2), {1, 3, 2, 0});
  EXPECT_EQ(r.ids, (std::vector<int>{1, 2}));
  // e^3/(e^3+e^2) and e^2/(e^3+e^2): the softmax denominator cancels.
  expect_weights(r.weights, {1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(1.0))});
}

TEST(RouterReference, SoftmaxWithoutRenormScaledByRsf) {
  const auto r = reference_row(problem(4, 2, 0, 1, 1, "softmax", 0, 0, 2.0), {1, 3, 2, 0});
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
  EXPECT_EQ(r.ids, (std::vector<int>{1, 2}));
  expect_weights(r.weights, {2 * std::exp(3.0) / z, 2 * std::exp(2.0) / z});
}

TEST(RouterReference, TiesGoToTheLowerIndex) {
  EXPECT_EQ(reference_row(problem(4, 2), {1, 2, 2, 0}).ids, (std::vector<int>{1, 2}));
  EXPECT_EQ(reference_row(problem(4, 2), {2, 1, 2, 2}).ids, (std::vector<int>{0, 2}));
  EXPECT_EQ(reference_row(problem(4, 3), {5, 5, 5, 5}).ids, (std::vector<int>{0, 1, 2}));
  // -0 and +0 are equal scores: a tie, not an order.
  EXPECT_EQ(reference_row(problem(2, 1, 0, 1, 1, "sigmoid", 1), {0, 0}, {0.0f, 0.0f}).ids, (std::vector<int>{0}));
}

TEST(RouterReference, NaNRanksLastWithWeightZero) {
  const auto r = reference_row(problem(4, 3), {kNaN, 1, 0, kNaN});
  EXPECT_EQ(r.ids, (std::vector<int>{1, 2, 0}));
  const double e = std::exp(1.0);
  expect_weights(r.weights, {e / (e + 1), 1 / (e + 1), 0});
}

TEST(RouterReference, NaNTiesWithMinusInfinity) {
  // c = -inf (bias) and c = NaN rank equally: the lower index goes first.
  const auto r = reference_row(problem(4, 3, 0, 1, 1, "sigmoid", 1), {0, kNaN, 0, 0}, {0, 0, -kInf, 1});
  EXPECT_EQ(r.ids, (std::vector<int>{3, 0, 1}));
}

TEST(RouterReference, SoftmaxPlusInfinityLogitsShareTheWholeMass) {
  // The limit of the softmax: the +inf experts get 1/2 each, every other expert 0 (NaN and
  // -inf included), and the zero ties go to the lower index.
  const std::vector<float> x{0, kInf, kNaN, -kInf, kInf, 2};
  const auto r = reference_row(problem(6, 3), x);
  EXPECT_EQ(r.ids, (std::vector<int>{1, 4, 0}));
  expect_weights(r.weights, {0.5, 0.5, 0});
  // Unrenormalised the scores themselves show: 1/2 each, times rsf.
  expect_weights(reference_row(problem(6, 2, 0, 1, 1, "softmax", 0, 0, 3.0), x).weights, {1.5, 1.5});
  // One +inf takes it all.
  const auto one = reference_row(problem(3, 2, 0, 1, 1, "softmax", 0, 0), {5, -1, kInf});
  EXPECT_EQ(one.ids, (std::vector<int>{2, 0}));
  expect_weights(one.weights, {1, 0});
}

TEST(RouterReference, SoftmaxNaNLogitScoresZeroSoTheBiasStillRanksIt) {
  // s = [0, e/(e+1), 1/(e+1)]: the NaN expert's c is its bias, 1, which ranks it first.
  const auto r = reference_row(problem(3, 2, 0, 1, 1, "softmax", 1, 0), {kNaN, 1, 0}, {1, 0, 0});
  EXPECT_EQ(r.ids, (std::vector<int>{0, 1}));
  const double e = std::exp(1.0);
  expect_weights(r.weights, {0, e / (e + 1)});
}

TEST(RouterReference, SoftmaxRowWithoutALogitAboveMinusInfinityScoresNaN) {
  // All NaN, all -inf, or a mix (NaN counting as -inf): every score is NaN, so the bias does
  // not steer, experts 0..k-1 are taken with weight 0, and shared slots still get 1.
  for (const auto& x : {std::vector<float>{kNaN, kNaN, kNaN, kNaN}, std::vector<float>{-kInf, -kInf, -kInf, -kInf},
                        std::vector<float>{-kInf, kNaN, -kInf, kNaN}}) {
    const auto r = reference_row(problem(4, 2, 1, 1, 1, "softmax", 1), x, {0, 0, 5, 9});
    EXPECT_EQ(r.ids, (std::vector<int>{0, 1, 4}));
    expect_weights(r.weights, {0, 0, 1});
  }
}

TEST(RouterReference, SoftmaxOfNonFiniteRowsScoreByScore) {
  // softmax_row itself, which the cpu backend shares.
  auto soft = [](std::vector<float> x) {
    std::vector<float> s(x.size());
    router::softmax_row(x.data(), static_cast<std::int64_t>(x.size()), s.data());
    return s;
  };
  EXPECT_EQ(soft({kInf, kNaN, 1, -kInf, kInf, kInf}), (std::vector<float>{1 / 3.0f, 0, 0, 0, 1 / 3.0f, 1 / 3.0f}));
  EXPECT_EQ(soft({0, kNaN, 0, -kInf}), (std::vector<float>{0.5f, 0, 0.5f, 0}));
  for (float v : soft({-kInf, kNaN, -kInf})) EXPECT_TRUE(std::isnan(v));
}

TEST(RouterReference, BiasSelectsButWeightsUseScores) {
  // s = sigmoid(logit) = [.5, s(1), .5, s(-1)], c = s + bias = [.5, .731, .7, .769]
  const auto r = reference_row(problem(4, 2, 0, 1, 1, "sigmoid", 1, 1, 2.5), {0, 1, 0, -1}, {0, 0, 0.2f, 0.5f});
  EXPECT_EQ(r.ids, (std::vector<int>{3, 1}));
  // s(1) + s(-1) = 1, so renormalised weights are the scores themselves.
  expect_weights(r.weights, {2.5 * sigm(-1), 2.5 * sigm(1)});
}

TEST(RouterReference, GroupsTop2SumAndMax) {
  // Groups of two: g0 {3,-3}, g1 {1,1}, g2 {2,0.5}, g3 {-1,-1}; sigmoid scores.
  const std::vector<float> x{3, -3, 1, 1, 2, 0.5f, -1, -1};
  // top2_sum: g2 (1.50) and g1 (1.46) beat g0 (1.00): expert 0, the best overall, is out.
  const auto sum = reference_row(problem(8, 2, 0, 4, 2, "sigmoid"), x);
  EXPECT_EQ(sum.ids, (std::vector<int>{4, 2}));
  expect_weights(sum.weights, {sigm(2) / (double(sigm(2)) + sigm(1)), sigm(1) / (double(sigm(2)) + sigm(1))});
  // max: g0 (0.95) and g2 (0.88) are kept.
  EXPECT_EQ(reference_row(problem(8, 2, 0, 4, 2, "sigmoid", 0, 1, 1.0, "max"), x).ids, (std::vector<int>{0, 4}));
  // Keeping every group is no grouping at all.
  EXPECT_EQ(reference_row(problem(8, 2, 0, 4, 4, "sigmoid"), x).ids, (std::vector<int>{0, 4}));
}

TEST(RouterReference, GroupTiesKeepTheLowerGroup) {
  EXPECT_EQ(reference_row(problem(4, 1, 0, 2, 1, "sigmoid"), {1, 0, 0, 1}).ids, (std::vector<int>{0}));
  EXPECT_EQ(reference_row(problem(4, 1, 0, 2, 1, "sigmoid"), {0, 1, 1, 0}).ids, (std::vector<int>{1}));
}

TEST(RouterReference, OneExpertPerGroupScoresThatExpert) {
  const auto r = reference_row(problem(4, 2, 0, 4, 2, "sigmoid"), {0.5f, -1, 2, 1});
  EXPECT_EQ(r.ids, (std::vector<int>{2, 3}));
}

TEST(RouterReference, GroupScoresAreAddedInFp32) {
  // c = bias (sigmoid of -inf is 0): group 0 sums 1 + 0, group 1 sums 1 + 2^-26, which is 1 in
  // fp32. The tie keeps the lower group, so expert 0 is chosen, not expert 2.
  const float tiny = std::ldexp(1.0f, -26);
  const auto r = reference_row(problem(8, 1, 0, 4, 1, "sigmoid", 1), std::vector<float>(8, -kInf),
                               {1, 0, 1, tiny, 0, 0, 0, 0});
  EXPECT_EQ(r.ids, (std::vector<int>{0}));
  // A hair more and group 1's fp32 sum is above 1: expert 2.
  EXPECT_EQ(reference_row(problem(8, 1, 0, 4, 1, "sigmoid", 1), std::vector<float>(8, -kInf),
                          {1, 0, 1, std::ldexp(1.0f, -22), 0, 0, 0, 0})
                .ids,
            (std::vector<int>{2}));
}

TEST(RouterReference, SharedSlotsFollowTheRoutedOnes) {
  const auto r = reference_row(problem(4, 1, 2, 1, 1, "softmax", 0, 1, 3.0), {0, 0, 9, 0});
  EXPECT_EQ(r.ids, (std::vector<int>{2, 4, 5}));
  expect_weights(r.weights, {3.0, 1.0, 1.0});  // rsf scales the routed slots only
}

// ---- problems and inputs -------------------------------------------------------------------

TEST(RouterProblem, RejectsInconsistentShapes) {
  auto prep = [](const Params& p) { return tuner::prepare(router_family(), with(p, 4, "f32"), InputOptions{}); };
  EXPECT_THROW(prep(problem(10, 2, 0, 4, 2)), Error);   // G does not divide E
  EXPECT_THROW(prep(problem(16, 2, 0, 4, 5)), Error);   // TG > G
  EXPECT_THROW(prep(problem(16, 9, 0, 4, 2)), Error);   // k > TG * E/G
  EXPECT_THROW(prep(problem(16, 17)), Error);           // k > E
  try {
    prep(problem(16, 9, 0, 4, 2));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("topk_group"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(prep(problem(16, 8, 0, 4, 2)));
}

TEST(RouterProblem, InputsAreSeededAndRespectGivenTensors) {
  const Params p = with(problem(64, 4, 0, 1, 1, "sigmoid", 1), 16, "bf16");
  InputOptions opt;
  opt.seed = 5;
  const auto a = tuner::prepare(router_family(), p, opt), b = tuner::prepare(router_family(), p, opt);
  EXPECT_TRUE(compare_exact("logits", a.inputs.at("logits"), b.inputs.at("logits")).ok);
  EXPECT_TRUE(compare_exact("bias", a.inputs.at("bias"), b.inputs.at("bias")).ok);
  double spread = 0;
  for (std::int64_t e = 0; e < 64; ++e) spread += std::fabs(a.inputs.at("bias").get(e));
  EXPECT_GT(spread, 0.5);  // real random values, not zeros
  // A given logits tensor is kept, and the bias does not depend on it.
  TensorMap given;
  given.emplace("logits", router_cases::inputs(p, "ties", 1).at("logits"));
  const auto c = tuner::prepare(router_family(), p, opt, given);
  EXPECT_TRUE(compare_exact("logits", c.inputs.at("logits"), given.at("logits")).ok);
  EXPECT_TRUE(compare_exact("bias", c.inputs.at("bias"), a.inputs.at("bias")).ok);
  // No bias tensor without bias=1.
  EXPECT_EQ(tuner::prepare(router_family(), with(problem(64, 4), 4, "f32"), opt).inputs.count("bias"), 0u);
}

TEST(RouterProblem, CostCountsLogitsBiasAndOutputs) {
  const auto p = tuner::prepare(router_family(), with(problem(256, 8, 1, 8, 4, "sigmoid", 1), 100, "bf16"), InputOptions{});
  EXPECT_DOUBLE_EQ(p.cost.bytes, 100.0 * 256 * 2 + 256 * 4 + 100.0 * 9 * 8);
  EXPECT_GT(p.cost.flops, 100.0 * 256);
}

// ---- validation ----------------------------------------------------------------------------

struct ValidationFixture {
  tuner::Prepared p;
  TensorMap got;
  std::int32_t* ids() { return got.at("ids").data<std::int32_t>(); }
  float* w() { return got.at("weights").data<float>(); }
  Validation check() { return p.family->validate(p.problem, p.inputs, got, p.reference); }
};

ValidationFixture near_tie_fixture() {
  // Row 0: experts 1 and 2 are a near-tie (c differs by one ulp), 0 and 3 are far apart.
  const Params p = with(problem(6, 3, 1, 1, 1, "sigmoid", 1), 1, "f32");
  TensorMap given;
  Tensor l(DType::f32, {1, 6}), b(DType::f32, {6});
  const float x[6] = {3, 1, 1, -2, 0.5f, -1};
  for (int e = 0; e < 6; ++e) l.data<float>()[e] = x[e], b.data<float>()[e] = 0;
  b.data<float>()[2] = 1e-7f;  // c(2) two ulps above c(1)
  given.emplace("logits", std::move(l));
  given.emplace("bias", std::move(b));
  ValidationFixture f{tuner::prepare(router_family(), p, InputOptions{}, given), {}};
  f.got = f.p.reference;
  return f;
}

TEST(RouterValidation, ReferenceItselfPasses) {
  auto f = near_tie_fixture();
  EXPECT_EQ(std::vector<int>(f.ids(), f.ids() + 4), (std::vector<int>{0, 2, 1, 6}));
  EXPECT_TRUE(f.check().ok) << f.check().summary();
}

TEST(RouterValidation, AcceptsASwapOfNearTiedExperts) {
  auto f = near_tie_fixture();
  std::swap(f.ids()[1], f.ids()[2]);
  std::swap(f.w()[1], f.w()[2]);
  const auto v = f.check();
  EXPECT_TRUE(v.ok) << v.summary();
  EXPECT_NE(v.checks[0].detail.find("near-ties"), std::string::npos);
}

TEST(RouterValidation, AcceptsANearTiedExpertAtTheBoundary) {
  // k = 2: the reference takes {0, 2}; {0, 1} is as good up to rounding, with its own weights.
  const Params p = with(problem(6, 2, 0, 1, 1, "sigmoid", 1), 1, "f32");
  auto f = near_tie_fixture();
  TensorMap in = f.p.inputs;
  ValidationFixture g{tuner::prepare(router_family(), p, InputOptions{}, in), {}};
  g.got = g.p.reference;
  ASSERT_EQ(g.ids()[1], 2);
  g.ids()[1] = 1;
  const float s0 = sigm(3), s1 = sigm(1);
  g.w()[0] = s0 / (s0 + s1);
  g.w()[1] = s1 / (s0 + s1);
  EXPECT_TRUE(g.check().ok) << g.check().summary();
  g.ids()[1] = 4;  // a clearly worse expert
  EXPECT_FALSE(g.check().ok);
}

TEST(RouterValidation, RejectsFarSwapsDuplicatesAndBadIds) {
  auto swap_far = near_tie_fixture();
  std::swap(swap_far.ids()[0], swap_far.ids()[1]);
  std::swap(swap_far.w()[0], swap_far.w()[1]);
  EXPECT_FALSE(swap_far.check().ok);

  auto dup = near_tie_fixture();
  dup.ids()[2] = dup.ids()[1];  // c of the duplicate is near the one it replaces, but twice is wrong
  EXPECT_FALSE(dup.check().ok);

  auto range = near_tie_fixture();
  range.ids()[2] = 6;
  EXPECT_FALSE(range.check().ok);

  auto shared = near_tie_fixture();
  shared.ids()[3] = 5;
  EXPECT_FALSE(shared.check().ok);
}

TEST(RouterValidation, UnwrittenAlwaysFails) {
  auto a = near_tie_fixture();
  poison_host(TensorRef{a.ids() + 3, DType::i32, {1}});
  EXPECT_FALSE(a.check().ok);
  EXPECT_EQ(a.check().checks[0].unwritten, 1);
  auto b = near_tie_fixture();
  poison_host(TensorRef{b.w() + 1, DType::f32, {1}});
  EXPECT_FALSE(b.check().ok);
}

TEST(RouterValidation, WeightsWithinOneInHundredThousand) {
  auto ok = near_tie_fixture();
  ok.w()[0] *= 1 + 2e-6f;
  EXPECT_TRUE(ok.check().ok) << ok.check().summary();
  auto bad = near_tie_fixture();
  bad.w()[0] *= 1 + 1e-4f;
  EXPECT_FALSE(bad.check().ok);
  auto nan = near_tie_fixture();
  nan.w()[0] = kNaN;
  EXPECT_FALSE(nan.check().ok);
}

TEST(RouterValidation, AcceptsExchangingNearTiedGroups) {
  // Groups of two, keep one: g0 and g1 score the same up to a 1e-7 bias nudge.
  const Params p = with(problem(6, 2, 0, 3, 1, "sigmoid", 1), 1, "f32");
  TensorMap given;
  Tensor l(DType::f32, {1, 6}), b(DType::f32, {6});
  const float x[6] = {1, 0, 0, 1, -3, -3};
  for (int e = 0; e < 6; ++e) l.data<float>()[e] = x[e], b.data<float>()[e] = 0;
  b.data<float>()[3] = 1e-7f;
  given.emplace("logits", std::move(l));
  given.emplace("bias", std::move(b));
  ValidationFixture f{tuner::prepare(router_family(), p, InputOptions{}, given), {}};
  f.got = f.p.reference;
  ASSERT_EQ(std::vector<int>(f.ids(), f.ids() + 2), (std::vector<int>{3, 2}));  // g1 wins by the nudge
  f.ids()[0] = 0, f.ids()[1] = 1;  // g0 instead: same weights by symmetry
  EXPECT_TRUE(f.check().ok) << f.check().summary();
  f.ids()[0] = 4, f.ids()[1] = 5;  // g2 is far behind
  EXPECT_FALSE(f.check().ok);
}

// ---- cpu backend against the reference -----------------------------------------------------

void check_cpu_all_configs(const router_cases::Case& c, const std::string& dtype, std::int64_t T) {
  const Params prob = with(c.problem, T, dtype);
  InputOptions opt;
  opt.seed = 7 + static_cast<std::uint64_t>(T);
  const auto p = tuner::prepare(router_family(), prob, opt, router_cases::inputs(prob, c.data, T));
  const BackendImpl& cpu = router_family().need_backend(Backend::cpu);
  const DeviceInfo dev = cpu_device_info(4);
  const auto space = cpu.space(p.problem, dev, true);
  ASSERT_EQ(space.size(), 12u);
  for (const auto& cfg : space) {
    SCOPED_TRACE(c.name + " " + dtype + " T=" + std::to_string(T) + " " + cfg.str());
    const auto full = tuner::complete_config(router_family(), Backend::cpu, p.problem, cfg, dev);
    const auto o = tuner::run_cpu(p, full, 4);
    EXPECT_TRUE(o.validation.ok) << o.validation.summary();
    const Check ids = compare_exact("ids", o.outputs.at("ids"), p.reference.at("ids"));
    const Check w = compare_exact("weights", o.outputs.at("weights"), p.reference.at("weights"));
    EXPECT_TRUE(ids.ok) << ids.detail;
    EXPECT_TRUE(w.ok) << w.detail;
  }
}

TEST(RouterCpu, PresetsEveryConfig) {
  for (const auto& c : router_cases::presets())
    for (const char* dt : {"bf16", "f32", "f16"})
      for (std::int64_t T : {1, 7, 64}) check_cpu_all_configs(c, dt, T);
}

TEST(RouterCpu, EdgesEveryConfig) {
  for (const auto& c : router_cases::edges())
    for (const char* dt : {"bf16", "f32", "f16"})
      for (std::int64_t T : {1, 7, 64}) check_cpu_all_configs(c, dt, T);
}

TEST(RouterCpu, DefaultConfigIsValidAndInTheSpace) {
  const BackendImpl& cpu = router_family().need_backend(Backend::cpu);
  const DeviceInfo dev = cpu_device_info(2);
  for (const auto& c : router_cases::presets()) {
    const Params prob = complete(router_family().problem_params, with(c.problem, 64, "bf16"), "router");
    const Params def = cpu.default_config(prob, dev);
    EXPECT_EQ(cpu.invalid_reason(prob, def, dev), "");
    const auto space = cpu.space(prob, dev, true);
    EXPECT_NE(std::find(space.begin(), space.end(), def), space.end()) << def.str();
    EXPECT_FALSE(cpu.space(prob, dev, false).empty());
  }
}

// ---- cuda config space (host logic; the kernels run in tests/gpu and the emulator) ---------

TEST(RouterCudaSpace, EveryCaseHasValidConfigsAndADefault) {
  const BackendImpl& cuda = router_family().need_backend(Backend::cuda);
  DeviceInfo dev;
  dev.backend = Backend::cuda;
  auto cases = router_cases::presets();
  for (auto& e : router_cases::edges()) cases.push_back(e);
  for (const auto& c : cases)
    for (const char* dt : {"bf16", "f16", "f32"}) {
      SCOPED_TRACE(c.name + " " + dt);
      const Params prob = complete(router_family().problem_params, with(c.problem, 64, dt), "router");
      const auto full = cuda.space(prob, dev, true), curated = cuda.space(prob, dev, false);
      ASSERT_FALSE(curated.empty());
      EXPECT_GE(full.size(), curated.size());
      for (const auto& cfg : full) EXPECT_EQ(cuda.invalid_reason(prob, cfg, dev), "") << cfg.str();
      for (const auto& cfg : curated) EXPECT_NE(std::find(full.begin(), full.end(), cfg), full.end()) << cfg.str();
      const Params def = cuda.default_config(prob, dev);
      EXPECT_NE(std::find(full.begin(), full.end(), def), full.end()) << def.str();
    }
}

TEST(RouterCudaSpace, DefaultsOfTheHeadlinePresets) {
  auto def = [](const Params& p, const char* dt) {
    return router::cuda_default(RouterSpec::from(complete(router_family().problem_params, with(p, 8192, dt), "router")));
  };
  // DeepSeek-V3 bf16: four rows per warp, 16-byte loads, groups of 32 on 4 lanes (the fast
  // group path).
  const auto ds = def(problem(256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5), "bf16");
  EXPECT_EQ(ds.lanes, 8);
  EXPECT_EQ(ds.epl, 32);
  EXPECT_EQ(ds.vec_bytes, 16);
  // Kimi-K2 bf16: two rows per warp, no empty slot.
  const auto kimi = def(problem(384, 8, 1, 1, 1, "sigmoid", 1, 1, 2.827), "bf16");
  EXPECT_EQ(kimi.lanes, 16);
  EXPECT_EQ(kimi.lanes * kimi.epl, 384);
  const auto mixtral = def(problem(8, 2), "bf16");
  EXPECT_EQ(mixtral.lanes, 1);  // a thread per row
  const RouterSpec sp = RouterSpec::from(complete(router_family().problem_params, with(problem(256, 8, 1, 8, 4, "sigmoid", 1), 8, "bf16"), "router"));
  EXPECT_EQ(router::make_kernel_args(sp, ds, nullptr, nullptr, nullptr, nullptr).group_mode, router::kern::kLaneGroups);
}

TEST(RouterCudaSpace, ExplainsInvalidConfigs) {
  const RouterSpec sp = RouterSpec::from(complete(router_family().problem_params, with(problem(384, 8), 8, "bf16"), "router"));
  EXPECT_NE(router::cuda_invalid_reason(sp, {32, 8, 16, 4}).find("fewer than"), std::string::npos);      // 256 < 384
  EXPECT_NE(router::cuda_invalid_reason(sp, {32, 12, 16, 4}).find("no kernel"), std::string::npos);     // not compiled
  EXPECT_NE(router::cuda_invalid_reason(sp, {32, 16, 16, 3}).find("warps"), std::string::npos);
  const RouterSpec odd = RouterSpec::from(complete(router_family().problem_params, with(problem(36, 4), 8, "bf16"), "router"));
  EXPECT_NE(router::cuda_invalid_reason(odd, {32, 8, 16, 4}).find("does not divide"), std::string::npos);
  EXPECT_EQ(router::cuda_invalid_reason(odd, {32, 8, 8, 4}), "");
  const Params big = complete(router_family().problem_params, with(problem(2048, 8), 8, "bf16"), "router");
  EXPECT_TRUE(router_family().need_backend(Backend::cuda).space(big, DeviceInfo{}, true).empty());
  EXPECT_THROW(router_family().need_backend(Backend::cuda).default_config(big, DeviceInfo{}), Error);
}

TEST(RouterCudaSpace, CoversEveryExpertCountUpTo1024) {
  for (const char* dt : {"bf16", "f32"})
    for (std::int64_t E = 1; E <= router::kMaxExperts; ++E) {
      const RouterSpec sp = RouterSpec::from(complete(router_family().problem_params, with(problem(E, 1), 1, dt), "router"));
      ASSERT_FALSE(router::cuda_space(sp, false).empty()) << "E=" << E << " " << dt;
      ASSERT_NO_THROW(router::cuda_default(sp)) << "E=" << E;
    }
}

}  // namespace
