#include "tuner/measure/harness.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "common/emu_backend.hpp"
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
  retype_byte_inputs(f, p.problem, given);
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
  return fill_config(f.need_backend(b), problem, config, dev, f.name + " " + std::string(backend_name(b)) + " config");
}

namespace {

// Host backends (cpu, emu): outputs poisoned, the backend's workspace on the host.
struct HostRun {
  const BackendImpl& impl;
  Outcome o;
  std::vector<std::byte> ws;
  LaunchContext ctx;
  HostRun(const Prepared& p, Backend b, const Params& config, int threads) : impl(p.family->need_backend(b)) {
    o.outputs = allocate(p.output_specs);
    for (auto& [k, t] : o.outputs) poison_host(t.ref());
    // Emulated kernels get a poisoned workspace (NaN floats), as outputs are: a read before a write shows.
    const std::size_t bytes = impl.workspace_bytes ? impl.workspace_bytes(p.problem, config) : 0;
    check_host_workspace(*p.family, p.problem, static_cast<double>(bytes));
    ws.resize(bytes, b == Backend::emu ? std::byte{0xFF} : std::byte{0});
    ctx.threads = threads;
    ctx.workspace = ws.data();
    ctx.workspace_bytes = ws.size();
  }
  void run(const Prepared& p, const Params& config) {
    TensorMap& in = const_cast<TensorMap&>(p.inputs);  // backends read inputs only
    impl.run(p.problem, config, refs(in), refs(o.outputs), ctx);
  }
};

}  // namespace

Outcome run_cpu(const Prepared& p, const Params& config, int threads, int repeats) {
  HostRun h(p, Backend::cpu, config, threads);
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    h.run(p, config);
    const auto t1 = std::chrono::steady_clock::now();
    h.o.times_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (r == 0) h.o.validation = p.family->validate(p.problem, p.inputs, h.o.outputs, p.reference);
  }
  return std::move(h.o);
}

Outcome run_emu(const Prepared& p, const Params& config) {
  HostRun h(p, Backend::emu, config, 1);
  EmuLaunchLog log;
  try {
    h.run(p, config);
    h.o.kernels = log.kernels();
  } catch (const EmuFault& e) {
    Check c;
    c.tensor = "(emulator)";
    c.ok = false;
    c.detail = e.what();
    h.o.validation.ok = false;
    h.o.validation.checks.push_back(c);
    return std::move(h.o);
  }
  h.o.validation = p.family->validate(p.problem, p.inputs, h.o.outputs, p.reference);
  if (h.impl.not_emulated) h.o.not_emulated = h.impl.not_emulated(p.problem, config);
  return std::move(h.o);
}

Outcome run_backend(const Prepared& p, Backend b, const Params& config, const DeviceInfo& dev, int repeats) {
  switch (b) {
    case Backend::cpu: return run_cpu(p, config, dev.threads, repeats);
    case Backend::emu: return run_emu(p, config);
    default: return run_cuda(p, config, dev, repeats);
  }
}

}  // namespace moe::tuner
