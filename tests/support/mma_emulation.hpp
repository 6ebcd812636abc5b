#pragma once
// The mma.sync kernel as the emu backend runs it (gmm::emu::run_mma: the schedule kernel, the
// pad-row pass of a biased stage, the kernel and split-K's finalize, all emulated) on poisoned
// outputs and a poisoned workspace, judged by the gmm family's validation: shared by the
// emulation tests of the kernel's schedule and of its epilogue (the expert function).
#include <string>

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/family.hpp"
#include "gmm/spec.hpp"
#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace moe::testing {

inline std::vector<gmm::cuda::TileShape> mma_shapes() { return gmm::emu::emulated_tiles(); }

// The emu backend's path (gmm::emu::run_mma) with the grid capped, on poisoned outputs.
inline std::string run_mma_emulated(const tuner::Prepared& p, const gmm::cuda::TileShape& k, int split,
                                    long long max_ctas, int group_m, TensorMap& out) {
  const GmmSpec s = GmmSpec::parse(p.problem);
  out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  const gmm::cuda::Config c{k, split, group_m};
  std::vector<std::byte> ws(gmm::cuda::workspace_bytes(s, c), std::byte{0xFF});  // NaN partials until written
  TensorMap& in = const_cast<TensorMap&>(p.inputs);
  try {
    gmm::emu::run_mma(s, c, refs(in), refs(out), ws.data(), ws.size(), max_ctas);
  } catch (const EmuFault& e) {
    return e.what();
  }
  return {};
}

inline tuner::Prepared prep_gmm(const Params& pr, TensorMap given = {}, std::uint64_t seed = 1) {
  InputOptions o;
  o.seed = seed;
  return tuner::prepare(gmm_family(), pr, o, std::move(given));
}

// Empty string when the emulated kernel's output passes the family's validation; else a line
// naming the problem and config, and what failed.
inline std::string check_mma(const tuner::Prepared& p, const gmm::cuda::TileShape& k, int split, long long max_ctas,
                             int group_m = 1) {
  TensorMap out;
  const std::string what = p.problem.str() + " tile " + std::to_string(k.bm) + "x" + std::to_string(k.bn) + "x" +
                           std::to_string(k.bk) + " warps " + std::to_string(k.warps_m) + "x" +
                           std::to_string(k.warps_n) + " stages " + std::to_string(k.stages) + " split " +
                           std::to_string(split) + " group_m " + std::to_string(group_m) +
                           " ctas<=" + std::to_string(max_ctas) + ": ";
  const std::string err = run_mma_emulated(p, k, split, max_ctas, group_m, out);
  if (!err.empty()) return what + err + "\n";
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : what + v.summary() + "\n";
}

}  // namespace moe::testing
