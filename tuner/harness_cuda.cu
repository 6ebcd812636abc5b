#include <cuda_runtime.h>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/device_tensors.hpp"
#include "tuner/harness.hpp"

namespace moe::tuner {

Outcome run_cuda(const Prepared& p, const Params& config, const DeviceInfo& dev) {
  require_cuda_device(dev.ordinal);
  cuda_check(cudaSetDevice(dev.ordinal), "cudaSetDevice");
  const BackendImpl& impl = p.family->need_backend(Backend::cuda);
  DeviceTensors in = DeviceTensors::upload(p.inputs);
  DeviceTensors out = DeviceTensors::alloc(p.output_specs);
  out.poison();
  DeviceBuffer ws(impl.workspace_bytes ? impl.workspace_bytes(p.problem, config) : 0);
  LaunchContext ctx;
  ctx.stream = nullptr;
  ctx.workspace = ws.get();
  ctx.workspace_bytes = ws.size();
  impl.run(p.problem, config, in.refs(), out.refs(), ctx);
  cuda_check(cudaGetLastError(), (p.family->name + " kernel launch").c_str());
  cuda_check(cudaDeviceSynchronize(), (p.family->name + " kernel").c_str());
  Outcome o;
  o.outputs = out.download();
  o.validation = p.family->validate(p.problem, p.inputs, o.outputs, p.reference);
  return o;
}

}  // namespace moe::tuner
