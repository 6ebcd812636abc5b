#include "peers/engine.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "gmm/family.hpp"
#include "layer/family.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "peers/triton_space.hpp"

namespace moe::peers {

namespace {

std::mutex& runner_mu() {
  static std::mutex m;
  return m;
}
EngineRunner& runner_slot() {
  static EngineRunner r;
  return r;
}

void call_engine(Engine e, bool device, const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
                 const LaunchContext& ctx) {
  EngineRunner r;
  {
    std::lock_guard lock(runner_mu());
    r = runner_slot();
  }
  if (!r)
    throw Error(std::string("the ") + std::string(engine_name(e)) +
                " backend runs the engine's kernel in its Python worker (python -m moebench.peers.worker), "
                "which `moebench sweep --backend " + std::string(engine_name(e)) + "` starts; it does not run in this process");
  EngineCall c{e, &problem, &config, &in, &out, ctx.stream, device, device ? cuda_current_device() : 0};
  r(c);
}

BackendImpl triton_backend(Engine e, Backend slot) {
  BackendImpl b;
  b.backend = slot;
  b.config_params = triton_config_params();
  b.space = [](const Params& problem, const DeviceInfo& dev, bool) { return triton_space(problem, dev); };
  b.default_config = [](const Params& problem, const DeviceInfo&) { return triton_default(problem); };
  b.invalid_reason = [](const Params& problem, const Params& config, const DeviceInfo& dev) {
    return triton_invalid_reason(problem, config, dev);
  };
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  const bool device = slot == Backend::cuda;
  b.run = [e, device](const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
                      const LaunchContext& ctx) { call_engine(e, device, problem, config, in, out, ctx); };
  b.peer = [e](const Params&) { return std::string(engine_label(e)); };
  return b;
}

// The layer as the engines' fused_experts runs it, given the routing: moebench's router (its
// family default config) makes ids and weights, then the worker aligns the slots by expert
// (moe_align_block_size's block map, in torch), runs the engine's kernel for up over the tokens
// directly (top_k = K: no gather), silu*up (moebench's Triton kernel), the engine's kernel for
// down with the routed weights, and sums each token's K rows. One Triton config serves both
// GEMMs, as in the engines' config files.
struct Routing {
  Stage stage;
  Params config;
  std::vector<TensorSpec> outputs;
  std::size_t workspace = 0;  // the router's own, after its outputs
};

constexpr std::size_t kAlign = 256;
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Per problem once per process: a layer call must not ask the device its properties.
const Routing& routing_of(Backend slot, const Params& L) {
  static std::mutex mu;
  static std::map<std::pair<Backend, Params>, std::unique_ptr<Routing>> made;
  std::lock_guard lock(mu);
  auto& r = made[{slot, L}];
  if (!r) {
    r = std::make_unique<Routing>();
    r->stage = layer_stages(L).front();
    const BackendImpl& impl = family("router").need_backend(slot);
    const DeviceInfo dev = slot == Backend::cuda ? cuda_device_info(cuda_current_device()) : cpu_device_info(1);
    r->config = complete(impl.config_params, impl.default_config(r->stage.problem, dev), "router default config");
    r->outputs = family("router").output_specs(r->stage.problem, {});
    for (const TensorSpec& t : r->outputs) r->workspace += round_up(static_cast<std::size_t>(numel(t.shape)) * dtype_size(t.dtype));
    r->workspace += impl.workspace_bytes ? impl.workspace_bytes(r->stage.problem, r->config) : 0;
  }
  return *r;
}

BackendImpl triton_layer_backend(Engine e, Backend slot) {
  BackendImpl b = triton_backend(e, slot);
  // The space and its rules are up's: the larger of the two GEMMs the config serves.
  auto up = [](const Params& L) { return layer_stages(L)[2].problem; };
  b.space = [up](const Params& L, const DeviceInfo& dev, bool) { return triton_space(up(L), dev); };
  b.default_config = [up](const Params& L, const DeviceInfo&) { return triton_default(up(L)); };
  b.invalid_reason = [up](const Params& L, const Params& config, const DeviceInfo& dev) {
    return triton_invalid_reason(up(L), config, dev);
  };
  b.peer = [e](const Params&) { return std::string(engine_label(e)) + " layer (moebench's router, torch's align)"; };
  b.workspace_bytes = [slot](const Params& L, const Params&) { return routing_of(slot, L).workspace; };
  const bool device = slot == Backend::cuda;
  b.run = [e, slot, device](const Params& L, const Params& config, const RefMap& in, const RefMap& out,
                            const LaunchContext& ctx) {
    const Routing& routing = routing_of(slot, L);
    if (ctx.workspace_bytes < routing.workspace)
      throw Error("the " + std::string(engine_name(e)) + " layer needs " + std::to_string(routing.workspace) +
                  " bytes of workspace for its routing, and was given " + std::to_string(ctx.workspace_bytes));
    RefMap all = in;
    RefMap ro;
    auto* at = static_cast<std::byte*>(ctx.workspace);
    for (const TensorSpec& t : routing.outputs) {
      TensorRef r{at, t.dtype, t.shape};
      at += round_up(r.nbytes());
      ro[t.name] = r;
      all[t.name] = r;
    }
    RefMap ri;
    for (const TensorSpec& t : family("router").input_specs(routing.stage.problem)) ri[t.name] = need(in, t.name);
    LaunchContext rc = ctx;
    rc.workspace = at;
    rc.workspace_bytes = ctx.workspace_bytes - static_cast<std::size_t>(at - static_cast<std::byte*>(ctx.workspace));
    rc.plan = nullptr;
    family("router").need_backend(slot).run(routing.stage.problem, routing.config, ri, ro, rc);
    call_engine(e, device, L, config, all, out, ctx);
  };
  return b;
}

}  // namespace

Engine parse_engine(std::string_view s) {
  if (s == "vllm") return Engine::vllm;
  if (s == "sglang") return Engine::sglang;
  throw Error("unknown engine '" + std::string(s) + "': use vllm or sglang");
}

bool is_engine_name(std::string_view s) { return s == "vllm" || s == "sglang"; }

std::string_view engine_name(Engine e) { return e == Engine::vllm ? "vllm" : "sglang"; }

std::string_view engine_label(Engine e) { return e == Engine::vllm ? "vLLM Triton" : "SGLang Triton"; }

std::vector<std::string> engine_families() { return {"gmm", "moe-layer"}; }

const FamilyDesc& engine_family(Engine e, const std::string& family) {
  const bool layer = family == "moe-layer";
  if (family != "gmm" && !layer)
    throw Error("the " + std::string(engine_name(e)) + " backend tunes the engine's Triton fused_moe kernel: its up and down "
                "GEMMs (`moebench sweep gmm --backend " + std::string(engine_name(e)) + "`) or the layer the engine runs "
                "with it (`moebench sweep moe-layer --backend " + std::string(engine_name(e)) + "`), not " + family);
  static std::mutex mu;
  static std::map<std::pair<Engine, bool>, std::unique_ptr<FamilyDesc>> made;
  std::lock_guard lock(mu);
  auto& slot = made[{e, layer}];
  if (!slot && layer) {
    slot = std::make_unique<FamilyDesc>(layer_family());
    slot->summary = "the layer as " + std::string(engine_label(e)) + " runs it: moebench's router, the engine's fused_moe "
                    "kernel for up (over the tokens, no gather) and down (with the routed weights), one config for both";
    slot->backends = {triton_layer_backend(e, Backend::cpu), triton_layer_backend(e, Backend::cuda)};
  } else if (!slot) {
    slot = std::make_unique<FamilyDesc>(gmm_family());
    slot->backends = {triton_backend(e, Backend::cpu), triton_backend(e, Backend::cuda)};
  }
  return *slot;
}

void set_engine_runner(EngineRunner runner) {
  std::lock_guard lock(runner_mu());
  runner_slot() = std::move(runner);
}

}  // namespace moe::peers
