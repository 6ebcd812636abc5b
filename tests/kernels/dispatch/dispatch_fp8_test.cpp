// dispatch in fp8 (DESIGN.md 1.6): the quantizing gather. The reference's scales and codes
// checked group by group against the rule written out here (fmax-style amax, the 1e-10 floor,
// the ue8m0 round-up, division then nearest e4m3), on x holding all-zero groups, NaN, inf and
// values at and beyond 448; every cpu config against the reference; the validation's
// tolerance; the cuda backend's refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/e4m3.hpp"
#include "common/emu_backend.hpp"
#include "dispatch/family.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;

Params problem(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t D, const std::string& fmt) {
  return Params{{"tokens", T}, {"experts", E}, {"topk", k}, {"shared", std::int64_t{0}}, {"hidden", D},
                {"dtype", std::string("fp8")}, {"align", std::int64_t{16}}, {"scale_fmt", fmt}};
}

InputOptions seeded(std::uint64_t s) {
  InputOptions o;
  o.seed = s;
  return o;
}

TEST(DispatchFp8Reference, ScalesAndCodesFollowTheRule) {
  for (const char* fmt : {"fp32", "ue8m0"}) {
    const auto p = tuner::prepare(dispatch_family(), problem(80, 6, 2, 256, fmt), seeded(4));
    const Tensor& x = p.inputs.at("x");
    const Tensor& q = p.reference.at("x_sorted");
    const Tensor& sc = p.reference.at("x_scale");
    const auto* src = p.reference.at("src").data<std::int32_t>();
    const std::int64_t R = q.shape()[0], D = 256, K = 2;
    int nan_groups = 0, inf_groups = 0, zero_groups = 0, big = 0, padding = 0;
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t g = 0; g < D / 128; ++g) {
        double amax = 0;
        bool nan = false;
        for (std::int64_t i = 0; i < 128; ++i) {
          const double v = src[r] >= 0 ? x.get((src[r] / K) * D + g * 128 + i) : 0.0;
          nan = nan || std::isnan(v);
          if (!std::isnan(v)) amax = std::fmax(amax, std::fabs(v));
        }
        nan_groups += nan;
        inf_groups += std::isinf(amax);
        zero_groups += src[r] >= 0 && amax == 0;
        big += amax >= 448;
        padding += src[r] < 0;
        float want = std::max(static_cast<float>(amax), 1e-10f) / 448.0f;
        if (std::string(fmt) == "ue8m0" && std::isfinite(want)) want = std::exp2(std::ceil(std::log2(want)));
        ASSERT_EQ(sc.data<float>()[r * 2 + g], want) << fmt << " row " << r << " group " << g;
        for (std::int64_t i = 0; i < 128; ++i) {
          const double v = src[r] >= 0 ? x.get((src[r] / K) * D + g * 128 + i) : 0.0;
          const std::uint8_t c = q.data<std::uint8_t>()[r * D + g * 128 + i];
          const float y = static_cast<float>(v) / want;
          if (std::isnan(y)) {
            EXPECT_EQ(c & 0x7F, 0x7F) << "row " << r;
            continue;
          }
          // The nearest e4m3 value: within half a step of y (steps are 2^-3 relative, 2^-9 absolute below 2^-6).
          const double back = fp8::to_float(c);
          EXPECT_LE(std::fabs(back - std::fmin(std::fmax(y, -448.0f), 448.0f)),
                    std::fmax(std::fabs(back) / 16, std::ldexp(1.0, -10)))
              << "row " << r << " value " << v << " scaled " << y;
        }
      }
    EXPECT_GT(nan_groups, 0);
    EXPECT_GT(inf_groups, 0);
    EXPECT_GT(zero_groups, 0);
    EXPECT_GT(big, 0);
    EXPECT_GT(padding, 0);
  }
}

TEST(DispatchFp8Cpu, EveryConfigMatchesTheReference) {
  for (const char* fmt : {"fp32", "ue8m0"}) {
    // 40 tokens on 16 experts with an expert-parallel slice: experts without rows, padding.
    Params p = problem(40, 16, 3, 384, fmt);
    p.set("expert_begin", std::int64_t{4}).set("expert_end", std::int64_t{12});
    const auto prepared = tuner::prepare(dispatch_family(), p, seeded(11));
    const BackendImpl& cpu = dispatch_family().need_backend(Backend::cpu);
    for (const Params& c : cpu.space(prepared.problem, cpu_device_info(2), true)) {
      const auto o = tuner::run_cpu(prepared, c, 2);
      EXPECT_TRUE(o.validation.ok) << fmt << " " << c.str() << ": " << o.validation.summary();
      // Bit for bit on the cpu: the same rule in the same order.
      EXPECT_EQ(std::memcmp(o.outputs.at("x_sorted").raw(), prepared.reference.at("x_sorted").raw(),
                            prepared.reference.at("x_sorted").nbytes()),
                0);
    }
  }
}

TEST(DispatchFp8Validate, OneStepPassesTwoStepsFail) {
  const auto p = tuner::prepare(dispatch_family(), problem(8, 4, 1, 128, "fp32"), seeded(2));
  const Params full = p.problem;
  auto with = [&](auto change) {
    TensorMap got = p.reference;
    change(got);
    return dispatch_family().validate(full, p.inputs, got, p.reference).ok;
  };
  std::int64_t at = -1;
  const Tensor& q = p.reference.at("x_sorted");
  for (std::int64_t i = 0; i < q.numel() && at < 0; ++i)
    if ((q.data<std::uint8_t>()[i] & 0x7F) > 8 && (q.data<std::uint8_t>()[i] & 0x7F) < 0x70) at = i;
  ASSERT_GE(at, 0);
  EXPECT_TRUE(with([](TensorMap&) {}));
  EXPECT_TRUE(with([&](TensorMap& g) { g.at("x_sorted").data<std::uint8_t>()[at] -= 1; }));
  EXPECT_FALSE(with([&](TensorMap& g) { g.at("x_sorted").data<std::uint8_t>()[at] -= 2; }));
  EXPECT_FALSE(with([&](TensorMap& g) { g.at("x_scale").data<float>()[at / 128] *= 1.5f; }));
}

TEST(DispatchFp8Problem, CudaSpaceIsTheQuantizingGatherAndShapesAreChecked) {
  const Params ok = complete(dispatch_family().problem_params, problem(8, 4, 1, 128, "fp32"), "dispatch");
  const BackendImpl& cuda = dispatch_family().need_backend(Backend::cuda);
  EXPECT_EQ(cuda.invalid_reason(ok, cuda.default_config(ok, DeviceInfo{}), DeviceInfo{}), "");
  const auto space = cuda.space(ok, DeviceInfo{}, true);
  ASSERT_FALSE(space.empty());
  for (const Params& c : space) EXPECT_EQ(c.s("order"), "row") << c.str();
  Params by_token = cuda.default_config(ok, DeviceInfo{});
  by_token.set("order", std::string("token"));
  EXPECT_NE(cuda.invalid_reason(ok, by_token, DeviceInfo{}).find("only threads varies"), std::string::npos);
  // The emu backend runs the cuda backend's host half and the quantizing gather's source.
  for (const char* fmt : {"fp32", "ue8m0"}) {
    const auto p = tuner::prepare(dispatch_family(), problem(21, 6, 4, 384, fmt), seeded(4));
    for (const Params& c : dispatch_family().need_backend(Backend::emu).space(p.problem, emu_device_info(), true)) {
      const auto o = tuner::run_emu(p, c);
      EXPECT_TRUE(o.validation.ok) << fmt << " " << c.str() << ": " << o.validation.summary();
    }
  }
  try {
    dispatch_family().check_problem(complete(dispatch_family().problem_params, problem(8, 4, 1, 100, "fp32"), "dispatch"));
    ADD_FAILURE() << "hidden 100 accepted for fp8";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 128"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("got 100"), std::string::npos) << e.what();
  }
}

}  // namespace
