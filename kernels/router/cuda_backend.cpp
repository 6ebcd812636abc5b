// The cuda BackendImpl: the family's view of cuda.hpp.
#include "router/cuda.hpp"

namespace moe::router {

BackendImpl cuda_backend() {
  BackendImpl b;
  b.backend = Backend::cuda;
  b.config_params = cuda_config_params();
  b.space = [](const Params& problem, const DeviceInfo&, bool full) {
    std::vector<Params> out;
    for (const auto& c : cuda_space(RouterSpec::from(problem), full)) out.push_back(c.params());
    return out;
  };
  b.default_config = [](const Params& problem, const DeviceInfo&) {
    return cuda_default(RouterSpec::from(problem)).params();
  };
  b.invalid_reason = [](const Params& problem, const Params& config, const DeviceInfo&) {
    return cuda_invalid_reason(RouterSpec::from(problem), CudaConfig::from(config));
  };
  b.run = [](const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
             const LaunchContext& ctx) {
    const RouterSpec sp = RouterSpec::from(problem);
    const float* bias = sp.bias ? need(in, "bias").as<const float>() : nullptr;
    router_cuda(sp, CudaConfig::from(config), need(in, "logits").data, bias, need(out, "weights").as<float>(),
                need(out, "ids").as<std::int32_t>(), static_cast<cudaStream_t>(ctx.stream));
  };
  return b;
}

}  // namespace moe::router
