#pragma once
// The options every command that names a problem shares: --model | --hf-config, --tp/--ep,
// one flag per problem parameter of any family (generated from the family descriptions),
// --set NAME=VALUE, --zip and --tokens. Each of them but --ep-rank may be a list (an axis,
// tuner/problem/axes.hpp): `sweep` runs every combination, the other commands take one.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "moe/family.hpp"
#include "tuner/problem/axes.hpp"

namespace moe::app {

struct ProblemArgs {
  std::string model, hf_config;  // lists of presets / config files
  std::string tp = "1", ep = "1";
  int ep_rank = 0;
  std::map<std::string, std::string> flags;  // per-parameter flags as typed
  std::vector<std::string> sets;             // --set NAME=VALUE
  std::vector<std::string> zip;              // --zip A,B
  std::string tokens;
};

void add_problem_options(CLI::App& cmd, ProblemArgs& a, const std::string& tokens_default);

// One combination of the axes, as a family's problem (without tokens, which the caller sets
// per point).
struct ProblemChoice {
  tuner::AxisValues axes;  // the values of the axes given more than one value
  Params problem;          // complete; empty when `skip` says why the combination is no problem
  Params slice;            // --ep's expert_begin/expert_end, for families that lack them (the layer)
  std::string skip;
};

// The axes given more than one value, in the order combinations are listed.
std::vector<tuner::Axis> multi_axes(const ProblemArgs& a);
// Every combination of the axes. strict: every named parameter must belong to the family.
// A value that is no value of its parameter is an Error; a combination the model cannot take
// (--ep not dividing the experts) is skipped with its reason, unless it is the only one.
std::vector<ProblemChoice> problem_choices(const FamilyDesc& f, const ProblemArgs& a, bool strict);
// The one problem of a command that takes one: an Error when an option holds a list.
Params problem_params(const FamilyDesc& f, const ProblemArgs& a, bool strict);

}  // namespace moe::app
