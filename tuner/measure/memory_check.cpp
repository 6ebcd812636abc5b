#include "tuner/measure/memory_check.hpp"

#include "layer/stage_configs.hpp"
#include "moe/memory.hpp"

namespace moe::tuner {

namespace {

std::string what(const FamilyDesc& f, const Params& problem) { return f.name + " at " + problem.str(); }

// The workspace of the config a point starts with (wgmma's grows to a GiB at 128k rows, split-K
// partials are large too). The layer's footprint already counts its intermediates (`between`),
// so of its workspace only the stages' own part is added. 0 when it cannot be told without the
// device (the layer resolves its stages there): the run then finds out.
double default_workspace(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev) {
  const BackendImpl* impl = f.backend(Backend::cuda);
  if (!impl || !impl->workspace_bytes || !impl->default_config) return 0;
  try {
    const Params config = impl->default_config(problem, dev);
    if (f.name == "moe-layer")
      return static_cast<double>(cached_resolved_layer(Backend::cuda, problem, config, dev.ordinal, 0)->stage_workspace);
    return static_cast<double>(impl->workspace_bytes(problem, config));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

void check_host_fits(const FamilyDesc& f, const Params& problem, const TensorMap& given) {
  if (!f.footprint) return;
  const Footprint fp = f.footprint(problem);
  MemoryParts parts;
  for (auto& [n, b] : fp.inputs)
    if (!given.count(n)) parts.push_back({n, b});
  parts.push_back({"outputs and their reference", 2 * fp.outputs});
  const MemoryLimit avail = host_memory_limit();
  // Headroom for the process itself, the reference's scratch and the rest of the machine.
  require_memory(what(f, problem), parts, 0.85 * avail.bytes - 0.5e9, avail, "host", kShardAdvice);
}

void check_host_workspace(const FamilyDesc& f, const Params& problem, double bytes) {
  if (bytes < 64e6) return;  // not worth reading the limits for
  const MemoryLimit avail = host_memory_limit();
  require_memory(what(f, problem), {{"the cpu backend's workspace (its intermediates)", bytes}}, 0.85 * avail.bytes - 0.5e9,
                 avail, "host", kShardAdvice);
}

void check_device_fits(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev, double extra_bytes,
                       const std::string& extra_name, double free_bytes) {
  if (!f.footprint) return;
  const Footprint fp = f.footprint(problem);
  MemoryParts parts = fp.inputs;
  parts.push_back({"outputs", fp.outputs});
  if (fp.between > 0) parts.push_back({"intermediates between its kernels", fp.between});
  if (extra_bytes > 0) parts.push_back({extra_name, extra_bytes});
  if (const double ws = default_workspace(f, problem, dev); ws > 0) parts.push_back({"the default config's workspace", ws});
  // Headroom for other configs' workspaces, the CUDA context's own allocations and library handles.
  const MemoryLimit avail{free_bytes, "free on " + dev.name + " (cudaMemGetInfo)"};
  require_memory(what(f, problem), parts, free_bytes - 0.5e9, avail, "device", kShardAdvice);
}

}  // namespace moe::tuner
