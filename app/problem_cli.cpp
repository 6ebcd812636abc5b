#include "app/problem_cli.hpp"

#include "app/flag_checks.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "moe/error.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/problem/problem.hpp"

namespace moe::app {

namespace {

struct FamilySpec {
  const FamilyDesc* family;
  const ParamSpec* spec;
};

// "a for router; b for dispatch, gmm" when the families differ, "a" when they agree.
std::string per_family(const std::vector<FamilySpec>& specs, const std::function<std::string(const ParamSpec&)>& text) {
  std::vector<std::pair<std::string, std::string>> groups;  // text, families; in family order
  for (auto& fs : specs) {
    const std::string t = text(*fs.spec);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == t; });
    if (it == groups.end()) groups.push_back({t, fs.family->name});
    else it->second += ", " + fs.family->name;
  }
  if (groups.size() == 1) return groups.front().first;
  std::string r;
  for (auto& [t, fams] : groups) r += (r.empty() ? "" : "; ") + t + " for " + fams;
  return r;
}

// A problem flag's help: which families have it, and each one's default and choices, since
// the flag is shared but the families differ (the router's dtype is its logits', f32).
std::string flag_help(const std::vector<FamilySpec>& specs) {
  std::string help = specs.front().spec->help + " (";
  if (specs.size() < families().size()) {
    for (auto& fs : specs) help += fs.family->name + (&fs == &specs.back() ? "; " : ", ");
  }
  help += "default " + per_family(specs, [](const ParamSpec& s) { return value_str(s.default_value); }) + ")";
  const std::string choices = per_family(specs, [](const ParamSpec& s) {
    std::string c;
    for (auto& x : s.choices) c += (c.empty() ? "" : "|") + x;
    if (s.kind == ParamKind::Float && s.above > -HUGE_VAL) c = "> " + value_str(s.above);
    return c;
  });
  if (!choices.empty()) help += ": " + choices;
  return help;
}

}  // namespace

void add_problem_options(CLI::App& cmd, ProblemArgs& a, const std::string& tokens_default) {
  cmd.add_option("--model", a.model, "model preset name (see `moebench list`) or preset .json path");
  cmd.add_option("--hf-config", a.hf_config, "a Hugging Face config.json to take the MoE shape from")
      ->excludes(cmd.get_option("--model"));
  allow_only(cmd.add_option("--tp", a.tp, "tensor parallelism: divides the intermediate size"), Allowed::positive_int);
  allow_only(cmd.add_option("--ep", a.ep, "expert parallelism: this rank holds experts/ep experts"), Allowed::positive_int);
  allow_only(cmd.add_option("--ep-rank", a.ep_rank, "which expert-parallel rank to model (with --ep)"),
             Allowed::non_negative_int, "0 .. ep-1");
  cmd.add_option("--tokens", a.tokens, "token count(s): 64 | 1,16,256 | 1-4096 | default")->default_str(tokens_default);
  a.tokens = tokens_default;
  // One flag per parameter name across all families: the descriptions are the only source.
  std::vector<std::string> names;
  std::map<std::string, std::vector<FamilySpec>> specs;
  for (const FamilyDesc* f : families())
    for (const ParamSpec& s : f->problem_params) {
      if (s.name == "tokens") continue;
      if (!specs.count(s.name)) names.push_back(s.name);
      specs[s.name].push_back({f, &s});
    }
  for (const std::string& name : names) {
    std::string* slot = &a.flags[name];
    auto* opt = cmd.add_option_function<std::string>(
        "--" + name,
        [slot, name](const std::string& v) {
          if (v.empty()) throw Error("--" + name + " '': give a value, or leave the flag out for the default");
          *slot = v;
        },
        flag_help(specs[name]));
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
  const Params model = model_params(a);
  Params p = tuner::problem_for(f, model, overrides, strict);
  const bool fp8 = p.has("dtype") && p.s("dtype") == "fp8";
  if (fp8 && (model.has("hidden") || model.has("quant"))) tuner::check_fp8_model(model, p, a.tp);
  const ParamSpec* dt = f.problem_param("dtype");
  const bool can_fp8 = dt && std::find(dt->choices.begin(), dt->choices.end(), "fp8") != dt->choices.end();
  static bool told = false;  // once per process: a sweep builds many problems
  if (!fp8 && can_fp8 && model.has("quant") && model.s("quant") == "fp8" && !told) {
    told = true;
    std::fprintf(stderr, "moebench: note: %s is served in fp8 (block-scaled W8A8); this run uses dtype=%s: add --dtype fp8 to tune what it runs\n",
                 (a.model.empty() ? a.hf_config : a.model).c_str(), p.s("dtype").c_str());
  }
  return p;
}

}  // namespace moe::app
