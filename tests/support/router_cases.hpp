#pragma once
// Router problems and edge-case inputs shared by the cpu, emulator and gpu test suites.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/rng.hpp"
#include "moe/family.hpp"
#include "router/family.hpp"
#include "router/spec.hpp"

namespace router_cases {

using moe::Params;

struct Case {
  std::string name;
  Params problem;        // without tokens
  std::string data = "random";  // random | ties | nan | specials
};

inline Params problem(std::int64_t E, std::int64_t k, std::int64_t S = 0, std::int64_t G = 1, std::int64_t TG = 1,
                      const std::string& scoring = "softmax", int bias = 0, int renorm = 1, double rsf = 1.0,
                      const std::string& group_score = "top2_sum") {
  return Params{{"experts", E},         {"topk", k},          {"shared", S},
                {"groups", G},          {"topk_group", TG},   {"scoring", scoring},
                {"bias", std::int64_t{bias}}, {"renormalize", std::int64_t{renorm}}, {"rsf", rsf},
                {"group_score", group_score}};
}

inline Params with(Params p, std::int64_t T, const std::string& dtype) {
  p.set("tokens", T);
  p.set("dtype", dtype);
  return p;
}

// The model presets, reduced to the router's parameters (dtype comes from the test).
inline std::vector<Case> presets() {
  std::vector<Case> out;
  const std::filesystem::path dir = std::filesystem::path(MOEBENCH_SOURCE_DIR) / "configs" / "models";
  std::vector<std::filesystem::path> files;
  for (auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ".json") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  const auto& fam = moe::router_family();
  for (auto& f : files) {
    std::ifstream in(f);
    const auto j = nlohmann::json::parse(in);
    Params p;
    for (auto& [key, v] : j.items()) {
      const moe::ParamSpec* spec = fam.problem_param(key);
      if (!spec || key == "dtype" || key == "tokens") continue;
      if (v.is_string()) p.set(key, v.get<std::string>());
      else if (spec->kind == moe::ParamKind::Float) p.set(key, v.get<double>());
      else p.set(key, v.get<std::int64_t>());
    }
    out.push_back({f.stem().string(), p});
  }
  return out;
}

// Shapes and options the presets do not reach.
inline std::vector<Case> edges() {
  return {
      {"e48_g4", problem(48, 6, 0, 4, 2, "sigmoid", 1)},                     // 12 per group
      {"e72_softmax", problem(72, 8)},
      {"e200_g8", problem(200, 8, 1, 8, 3, "sigmoid", 1, 1, 2.5)},           // 25 per group
      {"e7_odd", problem(7, 3, 0, 1, 1, "softmax", 0, 0)},
      {"e1000", problem(1000, 16, 0, 1, 1, "sigmoid", 1)},
      {"e1024_g8", problem(1024, 8, 2, 8, 4, "sigmoid", 1, 1, 1.5)},
      {"e64_one_group", problem(64, 8, 0, 1, 1, "softmax", 1)},
      {"e384_one_group", problem(384, 8, 1, 1, 1, "sigmoid", 1, 1, 2.827)},
      {"e256_g8_max", problem(256, 8, 0, 8, 4, "sigmoid", 1, 1, 1.0, "max")},
      {"e96_g3", problem(96, 4, 0, 3, 2, "softmax", 0, 1)},                  // 32 per group, 3 groups
      {"e12_g12", problem(12, 3, 0, 12, 3, "sigmoid", 1)},                   // one expert per group
      {"e16_g8_max", problem(16, 2, 0, 8, 2, "sigmoid", 0, 0, 1.0, "max")},
      {"e32_g16", problem(32, 4, 1, 16, 5, "sigmoid", 1)},                  // 2 per group
      {"k_equals_e", problem(16, 16, 0, 1, 1, "softmax")},
      {"k64", problem(256, 64, 2, 4, 2, "sigmoid", 1)},                     // the largest topk
      {"e960_g320", problem(960, 16, 0, 320, 40, "sigmoid", 1)},             // 3 per group, many groups
      {"k_equals_kept", problem(64, 16, 0, 8, 2, "sigmoid", 1)},             // exactly the kept experts
      {"no_renorm_rsf", problem(128, 6, 0, 1, 1, "softmax", 0, 0, 3.0)},
      {"sigmoid_norenorm", problem(128, 4, 2, 1, 1, "sigmoid", 0, 0, 1.7)},
      {"shared_many", problem(8, 2, 16, 1, 1, "softmax")},
      {"e1", problem(1, 1, 1)},
      {"e256_ties", problem(256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5), "ties"},
      {"e64_ties_softmax", problem(64, 8, 0, 1, 1, "softmax"), "ties"},
      {"e128_ties_groups", problem(128, 8, 0, 8, 3, "softmax", 0, 1, 1.0, "max"), "ties"},
      {"e256_nan", problem(256, 8, 1, 8, 4, "sigmoid", 1, 1, 2.5), "nan"},
      {"e128_nan_softmax", problem(128, 8), "nan"},
      {"e384_specials", problem(384, 8, 1, 1, 1, "sigmoid", 1), "specials"},
      {"e64_specials_softmax", problem(64, 4, 0, 4, 2, "softmax"), "specials"},
      // Softmax over non-finite logits (DESIGN 1.1 rule 1) on every shape family: small rows,
      // vec-1 rows, packed and wide rows, with bias, groups, shared slots and no renormalisation.
      {"e8_nonfinite", problem(8, 2), "nonfinite"},
      {"e7_nonfinite", problem(7, 3, 0, 1, 1, "softmax", 0, 0, 2.0), "nonfinite"},
      {"e64_nonfinite_bias", problem(64, 6, 2, 1, 1, "softmax", 1, 1, 2.446), "nonfinite"},
      {"e128_nonfinite_max", problem(128, 8, 0, 8, 3, "softmax", 0, 1, 1.0, "max"), "nonfinite"},
      {"e256_nonfinite_groups", problem(256, 8, 1, 8, 4, "softmax", 1, 1, 2.5), "nonfinite"},
      {"e384_nonfinite", problem(384, 8, 1, 1, 1, "softmax", 0, 0, 1.0), "nonfinite"},
      {"e1000_nonfinite", problem(1000, 16, 0, 1, 1, "softmax", 1), "nonfinite"},
      // Group scores are fp32 sums (DESIGN 1.1 rule 4): groups 0 and 1 tie there, so group 0 is
      // kept and expert 0 chosen; summed in double, group 1 would win.
      {"e8_fp32_group_sum", problem(8, 1, 0, 4, 1, "sigmoid", 1), "group_sum"},
  };
}

// One logit of a "nonfinite" row of the given mode (see inputs()).
inline double nonfinite_logit(int mode, moe::Rng& rng) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto r = rng.below(8);
  switch (mode) {
    case 0: return r == 0 ? inf : r == 1 ? nan : r == 2 ? -inf : 0.5 * static_cast<double>(rng.below(9) - 4);
    case 1: return r == 0 ? nan : r == 1 ? -inf : 0.5 * static_cast<double>(rng.below(9) - 4);
    case 2: return -inf;
    case 3: return r < 4 ? nan : -inf;
    case 4: return nan;
    default: return r < 4 ? nan : inf;
  }
}

// Inputs for the non-random data kinds (empty map: the family generates random inputs).
//  group_sum: every logit -inf (sigmoid scores 0, so c is the bias) and the bias
//    {1, 0, 1, 2^-26, 0, ...}: groups of two whose fp32 sums tie and whose exact sums do not.
//  ties: logits in {-1,-0.5,0,0.5,1} and bias in {0, 0.25}: many exact ties of experts and groups.
//  nan: a third of the rows all NaN, a third with a few NaN logits.
//  specials: +-inf, NaN and huge logits sprinkled in; NaN and +-inf in the bias.
//  nonfinite: row t by t % 6: (0) finite logits, NaN, -inf and at least one +inf; (1) finite,
//    NaN and -inf; (2) all -inf; (3) NaN and -inf only; (4) all NaN; (5) NaN and at least one
//    +inf. Finite logits on a 0.5 grid and the bias as for ties, so selection scores tie
//    exactly or differ widely: ids must match exactly.
inline moe::TensorMap inputs(const Params& problem, const std::string& data, std::uint64_t seed) {
  moe::TensorMap m;
  if (data == "random") return m;
  const moe::RouterSpec sp = moe::RouterSpec::from(problem);
  const std::int64_t T = sp.tokens, E = sp.experts;
  moe::Rng rng(seed * 7919 + 17);
  moe::Tensor logits(sp.dtype, {T, E});
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (std::int64_t t = 0; t < T; ++t) {
    const int mode = static_cast<int>(t % 3);
    for (std::int64_t e = 0; e < E; ++e) {
      double v = 2.0 * rng.normal();
      if (data == "ties") v = 0.5 * static_cast<double>(rng.below(5) - 2);
      if (data == "nan" && (mode == 0 || (mode == 1 && rng.below(8) == 0))) v = nan;
      if (data == "specials") {
        const auto r = rng.below(40);
        if (r == 0) v = inf;
        else if (r == 1) v = -inf;
        else if (r == 2) v = nan;
        else if (r == 3) v = 60000.0;
      }
      if (data == "nonfinite") v = nonfinite_logit(static_cast<int>(t % 6), rng);
      if (data == "group_sum") v = -inf;
      logits.set(t * E + e, v);
    }
    // Rows that promise a +inf get one at a random expert.
    if (data == "nonfinite" && (t % 6 == 0 || t % 6 == 5)) logits.set(t * E + rng.below(E), inf);
  }
  m.emplace("logits", std::move(logits));
  if (sp.bias) {
    moe::Tensor b(moe::DType::f32, {E});
    for (std::int64_t e = 0; e < E; ++e) {
      double v = data == "ties" || data == "nonfinite" ? 0.25 * static_cast<double>(rng.below(2)) : 0.1 * rng.normal();
      if (data == "specials") {
        // NaN bias makes c NaN whatever the sign of the NaN; -inf ties with it; +inf leads.
        const auto r = rng.below(12);
        v = r == 0 ? nan : r == 1 ? -inf : r == 2 ? inf : v;
      }
      if (data == "group_sum") v = e == 0 || e == 2 ? 1.0 : e == 3 ? std::ldexp(1.0, -26) : 0.0;
      b.set(e, v);
    }
    m.emplace("bias", std::move(b));
  }
  return m;
}

}  // namespace router_cases
