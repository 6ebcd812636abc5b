#include "tuner/measure/harness.hpp"

#include <algorithm>
#include <chrono>

#include "moe/error.hpp"
#include "tuner/problem/given_inputs.hpp"
#include "tuner/measure/memory_check.hpp"

namespace moe::tuner {

Prepared prepare(const FamilyDesc& f, const Params& problem, const InputOptions& opt, TensorMap given) {
  Prepared p;
  p.family = &f;
  p.problem = complete(f.problem_params, problem, "family '" + f.name + "'");
  if (f.check_problem) f.check_problem(p.problem);
  check_host_fits(f, p.problem, given);
  check_given_dtypes(f, p.problem, given);  // before make_inputs, whose own checks know less
  p.inputs = std::move(given);
  f.make_inputs(p.problem, opt, p.inputs);
  check_tensors(f.name, f.input_specs(p.problem), p.inputs, "input");
  p.output_specs = f.output_specs(p.problem, p.inputs);
  p.reference = allocate(p.output_specs);
  f.reference(p.problem, p.inputs, p.reference);
  p.cost = f.cost(p.problem, p.inputs);
  return p;
}

Params complete_config(const FamilyDesc& f, Backend b, const Params& problem, const Params& config,
                       const DeviceInfo& dev) {
  const BackendImpl& impl = f.need_backend(b);
  Params full = config;
  // Unset keys come from the family's default for this problem, not from spec defaults.
  const Params def = impl.default_config(problem, dev);
  for (auto& [k, v] : def.values())
    if (!full.has(k)) full.set(k, v);
  full = complete(impl.config_params, full, f.name + " " + std::string(backend_name(b)) + " config");
  if (impl.invalid_reason) {
    const std::string why = impl.invalid_reason(problem, full, dev);
    if (!why.empty()) throw Error(f.name + " config " + full.str() + " is invalid for this problem: " + why);
  }
  return full;
}

Outcome run_cpu(const Prepared& p, const Params& config, int threads, int repeats) {
  const BackendImpl& impl = p.family->need_backend(Backend::cpu);
  Outcome o;
  o.outputs = allocate(p.output_specs);
  for (auto& [k, t] : o.outputs) poison_host(t.ref());
  TensorMap& in = const_cast<TensorMap&>(p.inputs);  // backends read inputs only
  std::vector<std::byte> ws(impl.workspace_bytes ? impl.workspace_bytes(p.problem, config) : 0);
  LaunchContext ctx;
  ctx.threads = threads;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    impl.run(p.problem, config, refs(in), refs(o.outputs), ctx);
    const auto t1 = std::chrono::steady_clock::now();
    o.times_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (r == 0) o.validation = p.family->validate(p.problem, p.inputs, o.outputs, p.reference);
  }
  return o;
}

Outcome run_backend(const Prepared& p, Backend b, const Params& config, const DeviceInfo& dev, int repeats) {
  return b == Backend::cpu ? run_cpu(p, config, dev.threads, repeats) : run_cuda(p, config, dev, repeats);
}

}  // namespace moe::tuner
