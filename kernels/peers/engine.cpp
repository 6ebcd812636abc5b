#include "peers/engine.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "gmm/family.hpp"
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
    EngineCall c{e, &problem, &config, &in, &out, ctx.stream, device, 0};
    r(c);
  };
  b.peer = [e](const Params&) { return std::string(engine_label(e)); };
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

std::vector<std::string> engine_families() { return {"gmm"}; }

const FamilyDesc& engine_family(Engine e, const std::string& family) {
  if (family != "gmm")
    throw Error("the " + std::string(engine_name(e)) + " backend tunes the engine's Triton fused_moe kernel, which is the gmm "
                "family's work (its up and down GEMMs): use `moebench sweep gmm --backend " + std::string(engine_name(e)) +
                "`, not " + family);
  static std::mutex mu;
  static std::map<Engine, std::unique_ptr<FamilyDesc>> made;
  std::lock_guard lock(mu);
  auto& slot = made[e];
  if (!slot) {
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
