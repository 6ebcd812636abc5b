#include "tuner/problem/problem.hpp"

#include "moe/error.hpp"

namespace moe::tuner {

Params problem_for(const FamilyDesc& f, const Params& model, const Params& overrides, bool strict) {
  Params p;
  for (auto& [k, v] : model.values())
    if (const ParamSpec* spec = f.problem_param(k)) {
      Value val = v;
      // A preset may say dtype bf16 for a family whose dtype is only its logits' (router: f32 default).
      try {
        check_value(*spec, val);
      } catch (const Error&) {
        continue;
      }
      p.set(k, val);
    }
  for (auto& [k, v] : overrides.values()) {
    if (!f.problem_param(k)) {
      if (strict) {
        std::string names;
        for (auto& s : f.problem_params) names += (names.empty() ? "" : ", ") + s.name;
        throw Error("family '" + f.name + "' has no problem parameter '" + k + "' (it has: " + names + ")");
      }
      continue;
    }
    p.set(k, v);
  }
  return complete(f.problem_params, p, "family '" + f.name + "'");
}

const std::vector<std::int64_t>& default_token_grid() {
  static const std::vector<std::int64_t> g = {1,   2,   4,   8,    16,   24,   32,   48,   64,   96,
                                              128, 256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384};
  return g;
}

}  // namespace moe::tuner
