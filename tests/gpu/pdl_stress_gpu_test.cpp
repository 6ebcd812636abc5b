// Programmatic dependent launch under stress: two different routings (A, B, A, B) through the
// whole layer on one stream and one workspace with no host sync between the calls, each call
// into outputs of its own, every one validated after a single sync. A kernel that reads its
// predecessor's output before griddepcontrol.wait (the tile map, offsets, slabs, the layer's
// intermediates) reads the other routing's bytes here, where a warm-up leaves identical ones.
// With PDL on and off, on a plain stream and replayed from a captured graph; bf16 and fp8.
// Skipped where no GPU is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "require_gpu.hpp"
#include "layer/stage_configs.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

using tuner::DeviceTensors;

Params layer(const std::string& dtype) {
  return complete(family("moe-layer").problem_params,
                  Params{{"tokens", std::int64_t{37}}, {"experts", std::int64_t{16}}, {"topk", std::int64_t{4}},
                         {"shared", std::int64_t{1}},  {"hidden", std::int64_t{256}}, {"intermediate", std::int64_t{256}},
                         {"align", std::int64_t{dtype == "fp8" ? 1 : 16}}, {"dtype", dtype}},
                  "layer");
}

// Every stage at its family default, named explicitly (no test depends on configs/).
Params layer_config(const Params& L, std::int64_t pdl, const DeviceInfo& dev) {
  Params c{{"pdl", pdl}};
  for (const Stage& s : layer_stages(L)) {
    const BackendImpl& impl = family(s.family).need_backend(Backend::cuda);
    c.set(s.name, stage_config_text(complete(impl.config_params, impl.default_config(s.problem, dev), s.name)));
  }
  return tuner::complete_config(family("moe-layer"), Backend::cuda, L, c, dev);
}

struct Routing {
  tuner::Prepared p;
  DeviceTensors in;
  std::shared_ptr<const LaunchPlan> plan;
};

// Four calls A, B, A, B on `st` sharing `ws`; captured into a graph and replayed when `graph`.
// Returns the failures, one line each.
std::string alternate(const Params& L, const Params& config, bool graph, const DeviceInfo& dev) {
  const FamilyDesc& f = family("moe-layer");
  const BackendImpl& impl = f.need_backend(Backend::cuda);
  std::vector<Routing> r;
  for (auto [dist, seed] : {std::pair<const char*, std::uint64_t>{"uniform", 5}, {"zipf", 6}}) {
    Routing x{testing::prepare_seeded(f, L, {}, dist, seed), {}, nullptr};
    x.in = DeviceTensors::upload(x.p.inputs);
    x.plan = impl.plan ? impl.plan(x.p.problem, config, x.in.refs()) : nullptr;
    r.push_back(std::move(x));
  }
  DeviceBuffer ws(impl.workspace_bytes ? impl.workspace_bytes(L, config) : 0);
  std::vector<DeviceTensors> outs;
  for (int i = 0; i < 4; ++i) outs.push_back(DeviceTensors::alloc(r[0].p.output_specs));
  cudaStream_t st;
  cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  const auto call = [&](int i) {
    const Routing& x = r[static_cast<std::size_t>(i % 2)];
    LaunchContext ctx;
    ctx.stream = st;
    ctx.workspace = ws.get();
    ctx.workspace_bytes = ws.size();
    ctx.plan = x.plan.get();
    impl.run(x.p.problem, config, x.in.refs(), outs[static_cast<std::size_t>(i)].refs(), ctx);
  };
  // Modules loaded and plans warm before any capture; then the outputs poisoned.
  call(0);
  cuda_check(cudaStreamSynchronize(st), "warm-up");
  for (auto& o : outs) o.poison();
  tuner::poison_workspace(ws.get(), ws.size(), st);
  cuda_check(cudaStreamSynchronize(st), "poisoning");
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ex = nullptr;
  if (graph) cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < 4; ++i) call(i);
  if (graph) {
    cuda_check(cudaStreamEndCapture(st, &g), "cudaStreamEndCapture");
    cuda_check(cudaGraphInstantiate(&ex, g, 0), "cudaGraphInstantiate");
    cuda_check(cudaGraphLaunch(ex, st), "cudaGraphLaunch");
  }
  cuda_check(cudaStreamSynchronize(st), "the four calls");
  std::string fails;
  for (int i = 0; i < 4; ++i) {
    const Routing& x = r[static_cast<std::size_t>(i % 2)];
    const Validation v = f.validate(x.p.problem, x.p.inputs, outs[static_cast<std::size_t>(i)].download(), x.p.reference);
    if (!v.ok) fails += "call " + std::to_string(i) + " (routing " + (i % 2 ? "B" : "A") + "): " + v.summary() + "\n";
  }
  if (ex) cudaGraphExecDestroy(ex);
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(st);
  return fails;
}

TEST(PdlStressGpu, AlternatingRoutingsOnOneStreamAndWorkspace) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  for (const char* dtype : {"bf16", "fp8"})
    for (std::int64_t pdl : {1, 0})
      for (bool graph : {false, true}) {
        const Params L = layer(dtype);
        EXPECT_EQ(alternate(L, layer_config(L, pdl, dev), graph, dev), "")
            << dtype << " pdl=" << pdl << (graph ? " graph" : " stream");
      }
}

}  // namespace
}  // namespace moe
