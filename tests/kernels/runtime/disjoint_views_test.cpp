// The public entry points refuse an output that shares memory with an input, another output or
// the workspace: a kernel reads its inputs while it writes, so any overlap gives wrong numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "moe/error.hpp"
#include "moe/moe.hpp"

namespace {

using namespace moe;

constexpr std::int64_t T = 4, K = 2, D = 8, R = 10;

Kernel cpu_kernel(const std::string& family, const Params& problem) {
  KernelOptions o;
  o.backend = Backend::cpu;
  o.quiet = true;
  o.config = Params{};
  return Kernel(family, problem, o);
}

Kernel combine_kernel() {
  return cpu_kernel("combine", Params{{"experts", std::int64_t{4}}, {"topk", K}, {"hidden", D},
                                      {"dtype", std::string("f32")}});
}

TensorRef ref(void* p, DType t, Shape s) { return TensorRef{p, t, std::move(s)}; }

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct CombineArgs {
  std::vector<float> y = std::vector<float>(R * D + T * D, NAN), w = std::vector<float>(T * K);
  std::vector<std::int32_t> dst = std::vector<std::int32_t>(T * K);
  CombineArgs() {
    std::mt19937 g(7);
    std::normal_distribution<float> n;
    for (std::int64_t i = 0; i < R * D; ++i) y[i] = n(g);
    for (auto& v : w) v = std::abs(n(g));
    for (std::int64_t i = 0; i < T * K; ++i) dst[i] = static_cast<std::int32_t>((i * 3) % R);
  }
};

}  // namespace

TEST(DisjointViews, AnOutputOverAnInputIsRefusedAndNothingIsWritten) {
  const Kernel k = combine_kernel();
  CombineArgs a;
  const std::vector<float> before = a.y;
  const std::string why = error_of([&] {
    combine(k, ref(a.y.data(), DType::f32, {R, D}), ref(a.dst.data(), DType::i32, {T * K}),
            ref(a.w.data(), DType::f32, {T, K}), ref(a.y.data() + 3 * D, DType::f32, {T, D}));
  });
  EXPECT_EQ(why,
            "combine: output 'out' shares memory with input 'y_sorted': outputs are written while the inputs are "
            "read, so each output needs a buffer of its own");
  for (std::size_t i = 0; i < before.size(); ++i)
    ASSERT_TRUE(std::memcmp(&a.y[i], &before[i], sizeof(float)) == 0) << i;
}

TEST(DisjointViews, NeighbouringSlicesOfOneBufferRun) {
  const Kernel k = combine_kernel();
  CombineArgs a;
  float* out = a.y.data() + R * D;  // the rows right after y_sorted's last
  combine(k, ref(a.y.data(), DType::f32, {R, D}), ref(a.dst.data(), DType::i32, {T * K}),
          ref(a.w.data(), DType::f32, {T, K}), ref(out, DType::f32, {T, D}));
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t d = 0; d < D; ++d) {
      double want = 0;
      for (std::int64_t j = 0; j < K; ++j) want += double(a.w[t * K + j]) * a.y[a.dst[t * K + j] * D + d];
      ASSERT_NEAR(out[t * D + d], want, 1e-4) << t << "," << d;
    }
}

TEST(DisjointViews, TwoOutputsOverOneBufferAreRefused) {
  const Kernel k = cpu_kernel("router", Params{{"experts", std::int64_t{16}}, {"topk", std::int64_t{4}}});
  std::vector<float> logits(8 * 16, 0.25f), both(8 * 4, NAN);
  const std::string why = error_of([&] {
    router(k, ref(logits.data(), DType::f32, {8, 16}), nullptr, ref(both.data(), DType::f32, {8, 4}),
           ref(both.data() + 31, DType::i32, {8, 4}));  // one element in common
  });
  EXPECT_EQ(why.rfind("router: output 'ids' shares memory with output 'weights'", 0), 0u) << why;
  for (float v : both) ASSERT_TRUE(std::isnan(v));
}

TEST(DisjointViews, AWorkspaceOverAnInputOrOutputIsRefused) {
  const Kernel k = cpu_kernel("gmm", Params{{"experts", std::int64_t{2}}, {"topk", std::int64_t{1}},
                                            {"hidden", std::int64_t{16}}, {"intermediate", std::int64_t{8}},
                                            {"dtype", std::string("f16")}, {"align", std::int64_t{1}}});
  constexpr std::uint16_t kHalfNan = 0x7e00, kHalfOne = 0x3c00;
  std::vector<std::uint16_t> x(4 * 16, kHalfOne), w13(2 * 16 * 16, kHalfOne), h(4 * 8, kHalfNan);
  std::vector<std::int32_t> offsets{0, 2, 4};
  const auto call = [&](void* ws, std::size_t bytes) {
    return error_of([&] {
      gmm_up(k, 4, ref(x.data(), DType::f16, {4, 16}), ref(offsets.data(), DType::i32, {3}),
             ref(w13.data(), DType::f16, {2, 16, 16}), ref(h.data(), DType::f16, {4, 8}), nullptr, ws, bytes);
    });
  };
  EXPECT_EQ(call(w13.data() + 100, 64).rfind("gmm: the workspace shares memory with input 'w13'", 0), 0u);
  EXPECT_EQ(call(h.data() + 30, 16).rfind("gmm: output 'h' shares memory with the workspace", 0), 0u);
  for (std::uint16_t v : h) ASSERT_EQ(v, kHalfNan);
}
