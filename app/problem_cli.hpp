#pragma once
// The options every command that names a problem shares: --model | --hf-config, --tp/--ep,
// one flag per problem parameter of any family (generated from the family descriptions),
// --set NAME=VALUE, and --tokens.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "moe/family.hpp"

namespace moe::app {

struct ProblemArgs {
  std::string model, hf_config;
  int tp = 1, ep = 1, ep_rank = 0;
  std::map<std::string, std::string> flags;  // per-parameter flags as typed
  std::vector<std::string> sets;             // --set NAME=VALUE
  std::string tokens;
};

void add_problem_options(CLI::App& cmd, ProblemArgs& a, const std::string& tokens_default);

// The model parameters (preset or HF config, sharded by tp/ep); empty Params when neither is given.
Params model_params(const ProblemArgs& a);
// The family's problem (without tokens, which the caller sets per point). strict: every named
// parameter must belong to the family.
Params problem_params(const FamilyDesc& f, const ProblemArgs& a, bool strict);

}  // namespace moe::app
