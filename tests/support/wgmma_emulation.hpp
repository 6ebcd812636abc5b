#pragma once
// The wgmma path as the emu backend runs it (gmm::emu::run_wgmma: its own kernels emulated, the
// CUTLASS GEMM played on the host from the arrays the setup kernel wrote), judged by the gmm
// family's validation: shared by the bf16/f16 and the fp8 emulation tests.
#include <string>

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/family.hpp"
#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace moe::testing {

// Empty: the stage passed. Otherwise the emulator's complaint or the validation summary.
// `swap`: the swapped-operand kernel's arrays and GEMM.
inline std::string check_wgmma_stage(const Params& problem, TensorMap given, std::uint64_t seed, long long grid,
                                     bool swap = false) {
  InputOptions o;
  o.seed = seed;
  const auto p = tuner::prepare(gmm_family(), problem, o, std::move(given));
  const GmmSpec s = GmmSpec::parse(p.problem);
  TensorMap out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  try {
    gmm::emu::run_wgmma(s, refs(const_cast<TensorMap&>(p.inputs)), refs(out), grid, swap);
  } catch (const EmuFault& e) {
    return e.what();
  }
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : p.problem.str() + ": " + v.summary();
}

}  // namespace moe::testing
