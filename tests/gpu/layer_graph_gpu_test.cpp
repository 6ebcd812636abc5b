// The layer timed as engines run it: its launch sequence captured N times into one CUDA graph,
// with and without PDL, validates and gives a time per call; a stage whose library waits on the
// host is refused with the reason, and the device works on afterwards.
#include <gtest/gtest.h>

#include <cmath>

#include "require_gpu.hpp"
#include "layer/stage_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/timer_cuda.hpp"

namespace {

using namespace moe;
using namespace moe::tuner;

Params layer(std::int64_t T) {
  return complete(family("moe-layer").problem_params,
                  Params{{"tokens", T}, {"experts", std::int64_t{16}}, {"topk", std::int64_t{4}},
                         {"shared", std::int64_t{1}}, {"hidden", std::int64_t{256}}, {"intermediate", std::int64_t{128}},
                         {"align", std::int64_t{16}}},
                  "layer");
}

// Every stage at its family default, given explicitly (no table is read), gmm_up's replaced by
// the first config of its space with kernel=`up_kernel` when one is named.
Params stages(const Params& L, const DeviceInfo& dev, std::int64_t pdl, const std::string& up_kernel = "") {
  Params c;
  for (const Stage& s : layer_stages(L)) {
    const BackendImpl& impl = family(s.family).need_backend(Backend::cuda);
    Params sc = impl.default_config(s.problem, dev);
    if (s.name == "gmm_up" && !up_kernel.empty()) {
      sc = Params{};
      for (const Params& x : impl.space(s.problem, dev, true))
        if (x.has("kernel") && x.s("kernel") == up_kernel) {
          sc = x;
          break;
        }
      if (sc.values().empty()) return {};
    }
    c.set(s.name, stage_config_text(complete(impl.config_params, sc, s.name)));
  }
  c.set("pdl", pdl);
  return c;
}

}  // namespace

TEST(LayerGraphGpu, GraphTimedLayerValidatesAndGivesATimePerCall) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  const FamilyDesc& f = family("moe-layer");
  for (std::int64_t T : {1, 16}) {
    InputOptions opt;
    opt.seed = 40 + T;
    const Prepared p = prepare(f, layer(T), opt);
    CudaBench bench(p, dev, TimerMode::cold, false);
    for (std::int64_t pdl : {1, 0}) {
      SCOPED_TRACE("T=" + std::to_string(T) + " pdl=" + std::to_string(pdl));
      const Params config = complete_config(f, Backend::cuda, p.problem, stages(p.problem, dev, pdl), dev);
      const Outcome o = bench.validate(config);
      ASSERT_TRUE(o.validation.ok) << o.validation.summary();
      bench.set_config(config);
      ASSERT_EQ(bench.capture_calls(10), "");
      for (int i = 0; i < 5; ++i) {
        const TimedSample s = bench.graph_call_sample();
        EXPECT_EQ(s.timer, "graph");
        EXPECT_TRUE(std::isfinite(s.us) && s.us > 0) << s.us;
      }
      // The graph's calls left the layer's output as one call does: the gate passes after them.
      EXPECT_TRUE(bench.validate(config).validation.ok);
      const GraphTimes g = time_in_graph(p, config, dev, 4, 3);
      EXPECT_EQ(g.not_timed, "");
      ASSERT_EQ(g.per_call_us.size(), 3u);
      for (double us : g.per_call_us) EXPECT_GT(us, 0);
    }
  }
}

TEST(LayerGraphGpu, AStageThatWaitsOnTheHostIsRefusedWithTheReason) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  const FamilyDesc& f = family("moe-layer");
  const Prepared p = prepare(f, layer(4), InputOptions{});
  const Params given = stages(p.problem, dev, 1, "cublas");
  if (given.values().empty()) GTEST_SKIP() << "the gmm space offers no kernel=cublas config on " << dev.name;
  const Params config = complete_config(f, Backend::cuda, p.problem, given, dev);
  CudaBench bench(p, dev, TimerMode::cold, false);
  bench.set_config(config);
  const std::string why = bench.capture_calls(10);
  EXPECT_NE(why.find("waits on the host"), std::string::npos) << why;
  EXPECT_THROW(bench.graph_call_sample(), Error);
  EXPECT_EQ(cuda_sticky_error(0), "");
  EXPECT_GT(bench.sample().us, 0);  // the time alone still works
}
