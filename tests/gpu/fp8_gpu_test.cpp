// fp8 on the GPU where it has not run yet: the quantizing gather (x_sorted + x_scale against the
// reference bit for bit in codes, scales within an ulp), the fp8 decode gmm (kernel=mma, every
// config of the full space, up and down, both scale formats, ragged experts and an EP shard of
// DeepSeek-V3), and the whole layer in fp8 on the cuda backend, with and without programmatic
// dependent launch. Every config through the harness: poisoned outputs, the family's validation.
// Skipped where no GPU is visible.
#include <gtest/gtest.h>

#include "require_gpu.hpp"
#include "support/gmm_problems.hpp"
#include "support/prepared_problems.hpp"
#include "layer/stage_configs.hpp"
#include "moe/cuda_device.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using testing::fp8_gmm_problem;
using testing::prepare_seeded;

// Every config of the family's full cuda space (the `keep` ones) through the harness; the
// failures, one line each, naming problem and config.
template <class Keep>
std::string check_space(const tuner::Prepared& p, Keep keep, int* ran) {
  const DeviceInfo dev = cuda_device_info(0);
  std::string fails;
  for (const Params& cfg : p.family->need_backend(Backend::cuda).space(p.problem, dev, true)) {
    if (!keep(cfg)) continue;
    ++*ran;
    try {
      const tuner::Outcome o = tuner::run_cuda(p, tuner::complete_config(*p.family, Backend::cuda, p.problem, cfg, dev), dev);
      if (!o.validation.ok) fails += p.problem.str() + " config " + cfg.str() + ": " + o.validation.summary() + "\n";
    } catch (const std::exception& e) {
      fails += p.problem.str() + " config " + cfg.str() + " threw: " + e.what() + "\n";
    }
  }
  return fails;
}

TEST(Fp8Gpu, QuantizingGatherEveryConfig) {
  REQUIRE_GPU();
  const FamilyDesc& f = family("dispatch");
  for (const char* fmt : {"fp32", "ue8m0"})
    for (std::int64_t T : {1, 64, 300}) {
      const Params pr{{"tokens", T},          {"experts", std::int64_t{256}}, {"topk", std::int64_t{8}},
                      {"shared", std::int64_t{0}}, {"hidden", std::int64_t{7168}}, {"dtype", std::string("fp8")},
                      {"align", std::int64_t{16}}, {"scale_fmt", std::string(fmt)}};
      int ran = 0;
      EXPECT_EQ(check_space(prepare_seeded(f, pr, {}, T == 64 ? "zipf" : "uniform", 40 + T), [](const Params&) { return true; }, &ran), "")
          << fmt << " T=" << T;
      EXPECT_GT(ran, 0);
    }
}

TEST(Fp8Gpu, DecodeGmmEveryMmaConfig) {
  REQUIRE_GPU();
  const FamilyDesc& f = family("gmm");
  auto mma = [](const Params& c) { return c.s("kernel") == "mma"; };
  for (const char* stage : {"up", "down"})
    for (const char* fmt : {"fp32", "ue8m0"}) {
      // Ragged experts: empty ones, a single row, segments that are no tile multiple.
      TensorMap given;
      given["offsets"] = testing::i32_tensor({0, 0, 1, 1, 38, 60, 60, 97, 97});
      int ran = 0;
      EXPECT_EQ(check_space(prepare_seeded(f, fp8_gmm_problem(60, 8, 2, 512, 384, 1, stage, fmt), std::move(given), "uniform", 3), mma, &ran), "")
          << stage << " " << fmt;
      EXPECT_GT(ran, 0);
      // DeepSeek-V3 over EP 8 at decode batch sizes.
      for (std::int64_t T : {1, 16, 64}) {
        Params pr = fp8_gmm_problem(T, 256, 8, 7168, 2048, 16, stage, fmt);
        pr.set("expert_end", std::int64_t{32});
        ran = 0;
        EXPECT_EQ(check_space(prepare_seeded(f, pr, {}, "uniform", 5 + T), mma, &ran), "") << stage << " " << fmt << " T=" << T;
        EXPECT_GT(ran, 0);
      }
    }
}

TEST(Fp8Gpu, LayerEndToEndWithAndWithoutPdl) {
  REQUIRE_GPU();
  const FamilyDesc& f = family("moe-layer");
  const DeviceInfo dev = cuda_device_info(0);
  for (std::int64_t T : {1, 16, 300})
    for (std::int64_t pdl : {1, 0}) {
      const Params L = complete(f.problem_params,
                                Params{{"tokens", T},          {"experts", std::int64_t{16}}, {"topk", std::int64_t{4}},
                                       {"shared", std::int64_t{1}}, {"hidden", std::int64_t{512}},
                                       {"intermediate", std::int64_t{256}}, {"dtype", std::string("fp8")},
                                       {"scale_fmt", std::string(T == 16 ? "ue8m0" : "fp32")}},
                                "layer");
      // Every stage at its family default, named explicitly: no test depends on configs/.
      Params c{{"pdl", pdl}};
      for (const Stage& s : layer_stages(L)) {
        const BackendImpl& impl = family(s.family).need_backend(Backend::cuda);
        c.set(s.name, stage_config_text(complete(impl.config_params, impl.default_config(s.problem, dev), s.name)));
      }
      const tuner::Prepared p = prepare_seeded(f, L, {}, "uniform", 70 + T);
      const tuner::Outcome o = tuner::run_cuda(p, tuner::complete_config(f, Backend::cuda, p.problem, c, dev), dev);
      EXPECT_TRUE(o.validation.ok) << "T=" << T << " pdl=" << pdl << ": " << o.validation.summary();
    }
}

}  // namespace
}  // namespace moe
