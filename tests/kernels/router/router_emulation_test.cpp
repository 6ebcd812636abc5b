// The cuda router's row algorithm (kernels/router/cuda_row.hpp) run on the host under the
// simt emulator by the emu backend's path (router::router_emu): lanes as fibers that meet at
// every shuffle/reduction. Every
// compiled kernel shape is checked against the reference on the edge-case matrix, so the
// layout, group, tie and NaN logic is tested on machines without a GPU. The emulator also
// fails on divergence: a collective reached by some lanes only, or with different operands.
#include "emu/simt_cuda.hpp"  // first: cuda_row.hpp compiles against its CUDA names

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/rng.hpp"
#include "common/emu_backend.hpp"
#include "common/validate.hpp"
#include "router/cuda.hpp"
#include "router/cuda_row.hpp"
#include "router/cuda_shapes.hpp"
#include "router/emu.hpp"
#include "support/router_cases.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;

struct EmuResult {
  TensorMap outputs;
  Validation validation;
};

EmuResult emulate(const tuner::Prepared& p, const router::CudaConfig& cfg, long long ctas) {
  const RouterSpec sp = RouterSpec::from(p.problem);
  EmuResult r;
  r.outputs = allocate(p.output_specs);
  for (auto& [k, t] : r.outputs) poison_host(t.ref());
  const float* bias = sp.bias ? p.inputs.at("bias").data<float>() : nullptr;
  const auto args = router::make_kernel_args(sp, cfg, p.inputs.at("logits").raw(), bias,
                                             r.outputs.at("weights").data<float>(),
                                             r.outputs.at("ids").data<std::int32_t>());
  EXPECT_GE(router::cuda_shape_index(sp, cfg), 0);
  router::router_emu(sp, cfg, args, ctas);
  r.validation = p.family->validate(p.problem, p.inputs, r.outputs, p.reference);
  return r;
}

std::string cfg_str(const router::CudaConfig& c) {
  return "lanes=" + std::to_string(c.lanes) + " epl=" + std::to_string(c.epl) + " vec_bytes=" + std::to_string(c.vec_bytes);
}

// Every compiled shape valid for the case (at 4 warps a CTA: warps only size the CTA), on one
// CTA so the row loop's stride and prefetch run too.
void check_case(const router_cases::Case& c, const std::string& dtype, std::int64_t T) {
  const Params problem = router_cases::with(c.problem, T, dtype);
  const auto given = router_cases::inputs(problem, c.data, 3);
  InputOptions opt;
  opt.seed = 11;
  const auto p = tuner::prepare(router_family(), problem, opt, given);
  const RouterSpec sp = RouterSpec::from(p.problem);
  int ran = 0;
  for (const auto& cfg : router::cuda_space(sp, true)) {
    if (cfg.warps != 4) continue;
    SCOPED_TRACE(c.name + " " + dtype + " T=" + std::to_string(T) + " " + cfg_str(cfg));
    const auto r = emulate(p, cfg, 1);
    EXPECT_TRUE(r.validation.ok) << r.validation.summary();
    // Sigmoid scores are the reference's own float arithmetic here (same libm), and group
    // scores are fp32 sums on both sides: the ids must be identical, not merely near. Tie
    // and non-finite data have only exact ties or wide gaps, so their ids are exact under
    // softmax too (the tolerant validation alone would accept a wrong tie-break).
    if (sp.scoring == RouterScoring::sigmoid || c.data == "ties" || c.data == "nonfinite") {
      const Check ids = compare_exact("ids", r.outputs.at("ids"), p.reference.at("ids"));
      EXPECT_TRUE(ids.ok) << ids.detail;
    }
    ++ran;
  }
  if (sp.experts <= router::kMaxExperts) EXPECT_GT(ran, 0) << "no cuda config for " << c.name;
}

TEST(RouterEmulation, PresetsEveryShape) {
  for (const auto& c : router_cases::presets())
    for (const char* dt : {"bf16", "f32"}) check_case(c, dt, 7);
}

TEST(RouterEmulation, EdgesEveryShape) {
  for (const auto& c : router_cases::edges())
    for (const char* dt : {"bf16", "f16", "f32"}) check_case(c, dt, c.data == "nonfinite" ? 12 : 5);  // every row kind
}

TEST(RouterEmulation, ManyRowsPerWarpAndPartialLastStep) {
  // lanes < 32 route several rows per warp; 37 rows leave a partial last step.
  const router_cases::Case c{"e16", router_cases::problem(16, 4, 1, 4, 2, "sigmoid", 1, 1, 2.0)};
  check_case(c, "bf16", 37);
  check_case(c, "f32", 37);
}

TEST(RouterEmulation, SortedListPrimitivesMatchAFullSort) {
  // sort8 and merge_best8 (the 8-lane rows' top-k) against std::sort on (key, expert) pairs
  // whose keys repeat a lot: equal keys must come out lower expert first.
  using router::kern::Pair;
  Rng rng(29);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Pair> all;
    for (unsigned e = 0; e < 16; ++e)
      all.push_back(router::kern::make_pair(static_cast<unsigned>(rng.below(4)) * 0x40000000u, e * 7 + trial % 5));
    Pair a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = all[i], b[i] = all[8 + i];
    router::kern::sort8(a);
    router::kern::sort8(b);
    std::vector<Pair> want(all.begin(), all.begin() + 8);
    std::sort(want.begin(), want.end(), std::greater<Pair>());
    ASSERT_EQ(std::vector<Pair>(a, a + 8), want) << "sort8, trial " << trial;
    router::kern::merge_best8(a, b);
    std::sort(all.begin(), all.end(), std::greater<Pair>());
    ASSERT_EQ(std::vector<Pair>(a, a + 8), std::vector<Pair>(all.begin(), all.begin() + 8)) << "merge, trial " << trial;
  }
  // The packing orders by key, then by the lower expert.
  EXPECT_GT(router::kern::make_pair(5, 9), router::kern::make_pair(4, 1));
  EXPECT_GT(router::kern::make_pair(5, 1), router::kern::make_pair(5, 9));
  EXPECT_EQ(router::kern::pair_expert(router::kern::make_pair(5, 9)), 9u);
}

TEST(RouterEmulation, DetectsABrokenKernelArgument) {
  // The checks above must be able to fail: a wrong k in the kernel arguments leaves slots
  // unwritten, a wrong group count picks the wrong experts.
  const Params problem = router_cases::with(router_cases::problem(256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5), 6, "bf16");
  InputOptions opt;
  const auto p = tuner::prepare(router_family(), problem, opt);
  const RouterSpec sp = RouterSpec::from(p.problem);
  const auto cfg = router::cuda_default(sp);
  TensorMap out = allocate(p.output_specs);
  for (auto& [k, t] : out) poison_host(t.ref());
  auto args = router::make_kernel_args(sp, cfg, p.inputs.at("logits").raw(), p.inputs.at("bias").data<float>(),
                                       out.at("weights").data<float>(), out.at("ids").data<std::int32_t>());
  args.k = 7;
  router::router_emu(sp, cfg, args, 1);
  EXPECT_FALSE(p.family->validate(p.problem, p.inputs, out, p.reference).ok);
  args.k = 8;
  args.TG = 1;
  router::router_emu(sp, cfg, args, 1);
  EXPECT_FALSE(p.family->validate(p.problem, p.inputs, out, p.reference).ok);
}

TEST(RouterEmulation, EveryConfigThroughTheEmuBackend) {
  // What `moebench sweep router --backend emu` runs: the full cuda space for an H100 (every
  // warps count too), through the harness, on a grouped sigmoid preset with rows to stride over.
  const Params problem = router_cases::with(router_cases::problem(64, 4, 1, 8, 2, "sigmoid", 1, 1, 2.5), 40, "bf16");
  InputOptions opt;
  opt.seed = 5;
  const auto p = tuner::prepare(router_family(), problem, opt);
  const BackendImpl& emu = router_family().need_backend(Backend::emu);
  const auto space = emu.space(p.problem, emu_device_info(), true);
  ASSERT_GT(space.size(), 4u);
  for (const Params& c : space) {
    const tuner::Outcome o = tuner::run_emu(p, c);
    EXPECT_TRUE(o.validation.ok) << c.str() << ": " << o.validation.summary();
    EXPECT_TRUE(o.times_us.empty());
    EXPECT_TRUE(o.not_emulated.empty());
  }
}

}  // namespace
