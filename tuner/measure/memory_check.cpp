#include "tuner/measure/memory_check.hpp"

#include "moe/memory.hpp"

namespace moe::tuner {

namespace {

std::string what(const FamilyDesc& f, const Params& problem) { return f.name + " at " + problem.str(); }

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

void check_device_fits(const FamilyDesc& f, const Params& problem, const DeviceInfo& dev, double extra_bytes,
                       const std::string& extra_name, double free_bytes) {
  if (!f.footprint) return;
  const Footprint fp = f.footprint(problem);
  MemoryParts parts = fp.inputs;
  parts.push_back({"outputs", fp.outputs});
  if (extra_bytes > 0) parts.push_back({extra_name, extra_bytes});
  // Headroom for workspaces, the CUDA context's own allocations and library handles.
  const MemoryLimit avail{free_bytes, "free on " + dev.name + " (cudaMemGetInfo)"};
  require_memory(what(f, problem), parts, free_bytes - 0.5e9, avail, "device", kShardAdvice);
}

}  // namespace moe::tuner
