#include "app/problem_cli.hpp"

#include <set>

#include "moe/error.hpp"
#include "tuner/models.hpp"
#include "tuner/problem.hpp"

namespace moe::app {

void add_problem_options(CLI::App& cmd, ProblemArgs& a, const std::string& tokens_default) {
  cmd.add_option("--model", a.model, "model preset name (see `moebench list`) or preset .json path");
  cmd.add_option("--hf-config", a.hf_config, "a Hugging Face config.json to take the MoE shape from")
      ->excludes(cmd.get_option("--model"));
  cmd.add_option("--tp", a.tp, "tensor parallelism: divides the intermediate size")->check(CLI::PositiveNumber);
  cmd.add_option("--ep", a.ep, "expert parallelism: this rank holds experts/ep experts")->check(CLI::PositiveNumber);
  cmd.add_option("--ep-rank", a.ep_rank, "which expert-parallel rank to model (with --ep)")->check(CLI::NonNegativeNumber);
  cmd.add_option("--tokens", a.tokens, "token count(s): 64 | 1,16,256 | 1-4096 | default")->default_str(tokens_default);
  a.tokens = tokens_default;
  // One flag per parameter name across all families: the description is the only source.
  std::set<std::string> seen{"tokens"};
  for (const FamilyDesc* f : families())
    for (const ParamSpec& s : f->problem_params) {
      if (!seen.insert(s.name).second) continue;
      std::string help = s.help + " (default " + value_str(s.default_value) + ")";
      if (!s.choices.empty()) {
        help += ": ";
        for (std::size_t i = 0; i < s.choices.size(); ++i) help += (i ? "|" : "") + s.choices[i];
      }
      std::string* slot = &a.flags[s.name];
      auto* opt = cmd.add_option_function<std::string>(
          "--" + s.name, [slot](const std::string& v) { *slot = v; }, help);
      opt->group("Problem parameters (override the model)");
    }
  cmd.add_option("--set", a.sets, "NAME=VALUE for any problem parameter (repeatable)")
      ->group("Problem parameters (override the model)");
}

Params model_params(const ProblemArgs& a) {
  Params m;
  if (!a.model.empty()) m = tuner::load_model(a.model);
  else if (!a.hf_config.empty()) m = tuner::load_hf_config(a.hf_config);
  else if (a.tp == 1 && a.ep == 1) return m;
  else throw Error("--tp/--ep shard a model: give --model or --hf-config too");
  return tuner::apply_parallelism(m, a.tp, a.ep, a.ep_rank);
}

Params problem_params(const FamilyDesc& f, const ProblemArgs& a, bool strict) {
  Params overrides;
  auto put = [&](const std::string& name, const std::string& text) {
    const ParamSpec* spec = f.problem_param(name);
    if (!spec) {
      bool known = false;
      for (const FamilyDesc* g : families()) known = known || g->problem_param(name);
      if (!known) throw Error("no kernel family has a parameter '" + name + "' (see `moebench list`)");
      if (strict) throw Error("family '" + f.name + "' has no parameter '" + name + "'");
      return;
    }
    overrides.set(name, parse_value(*spec, text));
  };
  for (auto& [name, text] : a.flags)
    if (!text.empty()) put(name, text);
  for (auto& s : a.sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw Error("--set '" + s + "' is not NAME=VALUE");
    put(s.substr(0, eq), s.substr(eq + 1));
  }
  return tuner::problem_for(f, model_params(a), overrides, strict);
}

}  // namespace moe::app
