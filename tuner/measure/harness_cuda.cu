#include <cuda_runtime.h>

#include <algorithm>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/cuda_event.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/memory_check.hpp"

namespace moe::tuner {

Outcome run_cuda(const Prepared& p, const Params& config, const DeviceInfo& dev, int repeats) {
  require_cuda_device(dev.ordinal);
  cuda_check(cudaSetDevice(dev.ordinal), "cudaSetDevice");
  const BackendImpl& impl = p.family->need_backend(Backend::cuda);
  check_device_fits(*p.family, p.problem, dev, 0, "");
  DeviceTensors in = DeviceTensors::upload(p.inputs);
  DeviceTensors out = DeviceTensors::alloc(p.output_specs);
  DeviceBuffer ws(impl.workspace_bytes ? impl.workspace_bytes(p.problem, config) : 0);
  LaunchContext ctx;
  ctx.stream = nullptr;
  ctx.workspace = ws.get();
  ctx.workspace_bytes = ws.size();
  // Planned and warmed up before any event: module loading, CUTLASS's initialize and the
  // runtime's attribute queries are first-call costs, not the kernel's time.
  const auto plan = impl.plan ? impl.plan(p.problem, config, in.refs()) : nullptr;
  ctx.plan = plan.get();
  impl.run(p.problem, config, in.refs(), out.refs(), ctx);
  cuda_check(cudaGetLastError(), (p.family->name + " kernel launch (warm-up)").c_str());
  cuda_check(cudaDeviceSynchronize(), (p.family->name + " kernel (warm-up)").c_str());
  out.poison();  // the validated outputs are repeat 0's, not the warm-up's
  // And the workspace (tile map, split-K partials, fp8 slabs, the layer's intermediates), or it
  // still holds the warm-up's identical bytes, and a kernel reading its predecessor's output
  // before griddepcontrol.wait would validate. 0xFF: a tile map entry read early says expert -1.
  poison_workspace(ws.get(), ws.size(), nullptr);
  Outcome o;
  const Event start, stop;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    cuda_check(cudaEventRecord(start.e), "cudaEventRecord");
    impl.run(p.problem, config, in.refs(), out.refs(), ctx);
    cuda_check(cudaGetLastError(), (p.family->name + " kernel launch").c_str());
    cuda_check(cudaEventRecord(stop.e), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop.e), (p.family->name + " kernel").c_str());
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    o.times_us.push_back(ms * 1000.0);
    if (r == 0) {
      o.outputs = out.download();
      o.validation = p.family->validate(p.problem, p.inputs, o.outputs, p.reference);
    }
  }
  return o;
}

}  // namespace moe::tuner
