#pragma once
// Problems made concrete for a family's tests, as the tuner's harness does, with the seed and
// routing distribution as arguments; and the same minus make_inputs, for kernel-level tests
// that feed inputs the family itself would refuse (out-of-range ids, hand-made maps).
#include <string>
#include <utility>

#include "moe/family.hpp"
#include "tuner/measure/harness.hpp"

namespace moe::testing {

inline tuner::Prepared prepare_seeded(const FamilyDesc& f, const Params& p, TensorMap given = {},
                                      const std::string& dist = "uniform", std::uint64_t seed = 1) {
  InputOptions opt;
  opt.dist = dist;
  opt.seed = seed;
  return tuner::prepare(f, p, opt, std::move(given));
}

inline tuner::Prepared prepare_raw(const FamilyDesc& f, const Params& p, TensorMap inputs) {
  tuner::Prepared r;
  r.family = &f;
  r.problem = complete(f.problem_params, p, f.name);
  r.inputs = std::move(inputs);
  r.output_specs = f.output_specs(r.problem, r.inputs);
  r.reference = allocate(r.output_specs);
  f.reference(r.problem, r.inputs, r.reference);
  r.cost = f.cost(r.problem, r.inputs);
  return r;
}

}  // namespace moe::testing
