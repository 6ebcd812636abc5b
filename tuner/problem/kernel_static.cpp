#include "tuner/problem/kernel_static.hpp"

#include <string>

#include "common/emu_backend.hpp"
#include "gmm/mma/cuda_configs.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/family.hpp"
#include "router/cuda.hpp"
#include "router/spec.hpp"
#include "tuner/problem/layer_launches.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/problem/problem.hpp"

namespace moe::tuner {

DeviceInfo described_hopper(const std::string& name) {
  DeviceInfo d = emu_device_info();  // the H100 the emu backend describes, as a cuda device
  d.backend = Backend::cuda;
  d.name = name;
  return d;
}

namespace {

// Each router config of the full space valid for the preset, with the kernel arguments that pick
// its path through the row (group mode, scoring, bias) and the runtime loops' bounds.
json router_paths(const Params& model) {
  const FamilyDesc& f = family("router");
  const Params problem = problem_for(f, model, Params{}, false);
  const RouterSpec spec = RouterSpec::from(problem);
  const BackendImpl& cuda = f.need_backend(Backend::cuda);
  const DeviceInfo dev = described_hopper();
  json out = json::array();
  for (const Params& c : cuda.space(problem, dev, true)) {
    const router::CudaConfig cfg = router::CudaConfig::from(c);
    if (cfg.warps != 4) continue;  // warps only sizes the CTA: the row code is the same
    const router::kern::Args a = router::make_kernel_args(spec, cfg, nullptr, nullptr, nullptr, nullptr);
    out.push_back({{"lanes", cfg.lanes}, {"epl", cfg.epl}, {"vec_bytes", cfg.vec_bytes},
                   {"logits_bytes", dtype_size(spec.dtype)},
                   {"group_mode", a.group_mode}, {"lpg_shift", a.lpg_shift}, {"sigmoid", a.sigmoid},
                   {"bias", spec.bias}, {"k", a.k}, {"S", a.S}, {"G", a.G}, {"TG", a.TG}});
  }
  return out;
}

}  // namespace

json kernel_static_inputs() {
  // gmm's per-expert tile prefix grows with the local experts: routed plus fused shared ones.
  std::int64_t most = 0;
  std::string model;
  json router = json::object();
  for (const auto& name : model_names()) {
    const Params m = load_model(name);
    const std::int64_t e = m.i("experts") + (m.has("shared") ? m.i("shared") : 0);
    if (e > most) most = e, model = name;
    router[name] = router_paths(m);
  }
  json tiles = json::array();
  for (const auto& t : gmm::cuda::tiles()) {
    const auto& s = t.shape;
    tiles.push_back({{"block_m", s.bm}, {"block_n", s.bn}, {"block_k", s.bk}, {"warps_m", s.warps_m},
                     {"warps_n", s.warps_n}, {"stages", s.stages}, {"threads", s.threads()},
                     {"dynamic_smem_bytes", gmm::cuda::smem_bytes(s, most)}});
  }
  // Each CUTLASS instantiation's shared memory is fixed by its tile (CUTLASS sizes its stages
  // to fill the carve-out), so it is the kernel's own figure, not a formula of the problem.
  json wgmma_tiles = json::array();
  for (const auto& e : gmm::wgmma::entries()) {
    const auto& s = e.shape;
    wgmma_tiles.push_back({{"block_m", s.bm}, {"block_n", s.bn}, {"block_k", s.bk}, {"cluster_m", s.cluster_m},
                           {"cluster_n", s.cluster_n},
                           {"schedule", s.pingpong ? "pingpong" : "cooperative"},
                           {"dynamic_smem_bytes", e.smem}});
  }
  return {{"schema", "moebench/kernel-static@1"},
          {"max_experts", {{"experts", most}, {"model", model}}},
          {"gmm_tiles", tiles},
          {"wgmma_tiles", wgmma_tiles},
          {"router", router},
          {"layer_kernels", layer_kernels_per_call()}};
}

}  // namespace moe::tuner
