// The moe-layer on the GPU: the five cuda stages chained through the layer's workspace match
// the fp64 stage references, with the stage defaults and with explicit stage configs, at
// decode and prefill sizes; a worst-case row buffer far larger than the rows in use (the
// dispatch gather leaves its unused tail alone) changes nothing; two runs give the same bits.
#include <gtest/gtest.h>

#include <cstring>

#include "require_gpu.hpp"
#include "layer/stage_configs.hpp"
#include "moe/cuda_device.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;


// Stage configs given explicitly: no table is read, so no test depends on configs/.
Params stage_defaults(const Params& L, const DeviceInfo& dev) {
  Params c;
  for (const Stage& s : layer_stages(L)) {
    const BackendImpl& impl = family(s.family).need_backend(Backend::cuda);
    c.set(s.name, stage_config_text(complete(impl.config_params, impl.default_config(s.problem, dev), s.name)));
  }
  return c;
}

Params layer(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, std::int64_t D, std::int64_t I,
             std::int64_t A, const std::string& dtype = "bf16") {
  return complete(family("moe-layer").problem_params,
                  Params{{"tokens", T}, {"experts", E}, {"topk", k}, {"shared", S}, {"hidden", D},
                         {"intermediate", I}, {"align", A}, {"dtype", dtype}},
                  "layer");
}

tuner::Outcome run(const Params& L, const Params& config, const std::string& dist, std::uint64_t seed) {
  const FamilyDesc& f = family("moe-layer");
  InputOptions opt;
  opt.dist = dist;
  opt.seed = seed;
  const tuner::Prepared p = tuner::prepare(f, L, opt);
  const DeviceInfo dev = cuda_device_info(0);
  return tuner::run_cuda(p, tuner::complete_config(f, Backend::cuda, p.problem, config, dev), dev);
}

TEST(LayerGpu, MatchesTheStageReferencesAtDecodeAndPrefill) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  for (const char* dtype : {"bf16", "f16"})
    for (std::int64_t T : {1, 5, 37, 300}) {
      const Params L = layer(T, 16, 4, 1, 256, 128, 16, dtype);
      const auto o = run(L, stage_defaults(L, dev), T == 37 ? "zipf" : "uniform", 10 + T);
      EXPECT_TRUE(o.validation.ok) << dtype << " T=" << T << ": " << o.validation.summary();
    }
}

// align 64 over 64 experts: x_sorted has room for T*K + 64*63 rows, a decode batch uses a few
// hundred; whatever the unused rows hold must not reach the output.
TEST(LayerGpu, WorstCaseRowBufferWithFewRowsInUse) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  for (std::int64_t T : {1, 3, 64}) {
    const Params L = layer(T, 64, 6, 0, 128, 64, 64);
    const auto o = run(L, stage_defaults(L, dev), "uniform", 3 + T);
    EXPECT_TRUE(o.validation.ok) << "T=" << T << ": " << o.validation.summary();
  }
}

TEST(LayerGpu, EveryGatherOrderAndAutoConfigs) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  const Params L = layer(24, 32, 4, 0, 128, 64, 32);
  for (const char* order : {"row", "token"}) {
    Params c = stage_defaults(L, dev);
    const Stage dispatch = layer_stages(L)[1];
    const BackendImpl& impl = family("dispatch").need_backend(Backend::cuda);
    Params dc = complete(impl.config_params, impl.default_config(dispatch.problem, dev), "dispatch");
    dc.set("order", std::string(order));
    c.set("dispatch", stage_config_text(dc));
    const auto o = run(L, c, "zipf", 5);
    EXPECT_TRUE(o.validation.ok) << order << ": " << o.validation.summary();
  }
  // "auto": the tables (or the defaults, with a warning) through the layer's cache.
  const auto o = run(L, Params{}, "uniform", 6);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
}

TEST(LayerGpu, Deterministic) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  const Params L = layer(50, 16, 4, 1, 256, 128, 16);
  const auto a = run(L, stage_defaults(L, dev), "uniform", 9), b = run(L, stage_defaults(L, dev), "uniform", 9);
  ASSERT_TRUE(a.validation.ok) << a.validation.summary();
  const Tensor &x = a.outputs.at("out"), &y = b.outputs.at("out");
  ASSERT_EQ(x.nbytes(), y.nbytes());
  EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0);
}

}  // namespace
