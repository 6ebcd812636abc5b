#include "app/problem_cli.hpp"

#include "app/flag_checks.hpp"

#include <algorithm>
#include <climits>
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
  cmd.add_option("--model", a.model, "model preset name(s) (see `moebench list`) or preset .json path(s): a list sweeps each");
  cmd.add_option("--hf-config", a.hf_config, "a Hugging Face config.json (or a list) to take the MoE shape from")
      ->excludes(cmd.get_option("--model"));
  cmd.add_option("--tp", a.tp, "tensor parallelism (a list sweeps each): divides the intermediate size")->default_str("1");
  cmd.add_option("--ep", a.ep, "expert parallelism (a list sweeps each): this rank holds experts/ep experts")->default_str("1");
  allow_only(cmd.add_option("--ep-rank", a.ep_rank, "which expert-parallel rank to model (with --ep)"),
             Allowed::non_negative_int, "0 .. ep-1");
  cmd.add_option("--zip", a.zip, "A,B: pair the lists of these parameters element by element instead of crossing them (repeatable)")
      ->group("Problem parameters (override the model)");
  cmd.add_option("--tokens", a.tokens, "token count(s): 64 | 1,16,256 | 1-4096 (powers of two) | default")->default_str(tokens_default);
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
  cmd.add_option("--set", a.sets, "NAME=VALUE for any problem parameter, VALUE a list too (repeatable)")
      ->group("Problem parameters (override the model)");
}

namespace {

struct Given {
  std::string name, flag, text;  // parameter, the option that gave it, its values as typed
};

// Every problem parameter the user named, by flag or --set, once each.
std::vector<Given> given_params(const ProblemArgs& a) {
  std::vector<Given> out;
  auto add = [&](const std::string& name, const std::string& flag, const std::string& text) {
    if (name == "tokens") throw Error(flag + ": give token counts with --tokens (e.g. --tokens 1,16)");
    bool known = false;
    for (const FamilyDesc* g : families()) known = known || g->problem_param(name);
    if (!known) throw Error("no kernel family has a parameter '" + name + "' (see `moebench list`)");
    for (auto& g : out)
      if (g.name == name) throw Error(flag + " gives " + name + " again (also by " + g.flag + "): give each parameter once, its values as a list");
    out.push_back({name, flag, text});
  };
  for (auto& [name, text] : a.flags)
    if (!text.empty()) add(name, "--" + name, text);
  for (auto& s : a.sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--set '" + s + "' is not NAME=VALUE");
    add(s.substr(0, eq), "--set " + s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

// The spec of `name` in `f`, else in the first family that has it.
const ParamSpec& spec_of(const FamilyDesc& f, const std::string& name) {
  if (const ParamSpec* s = f.problem_param(name)) return *s;
  for (const FamilyDesc* g : families())
    if (const ParamSpec* s = g->problem_param(name)) return *s;
  throw Error("no kernel family has a parameter '" + name + "'");
}

bool integer_param(const std::string& name) {
  for (const FamilyDesc* g : families())
    if (const ParamSpec* s = g->problem_param(name)) return s->kind == ParamKind::Int;
  return false;
}

std::vector<tuner::Axis> all_axes(const ProblemArgs& a) {
  std::vector<tuner::Axis> axes;
  if (!a.model.empty()) axes.push_back({"model", tuner::axis_values("--model", a.model, false)});
  if (!a.hf_config.empty()) axes.push_back({"hf_config", tuner::axis_values("--hf-config", a.hf_config, false)});
  for (const char* n : {"tp", "ep"}) {
    const std::string flag = std::string("--") + n, text = std::string(n) == "tp" ? a.tp : a.ep;
    const std::string what = ": must be a positive integer (or a list of them, 1,2,4, or a range of powers of two, 1-8)";
    tuner::Axis ax{n, {}};
    try {
      ax.values = tuner::axis_values(flag, text, true);
    } catch (const Error&) {
      throw Error(flag + " " + text + what);
    }
    for (auto& v : ax.values) {
      const std::string which = flag + " " + text + ": " + (ax.values.size() > 1 ? v + " " : "");
      if (std::stoll(v) < 1) throw Error(flag + " " + text + what);
      if (std::stoll(v) > INT_MAX) throw Error(which + "must be at most " + std::to_string(INT_MAX));
    }
    axes.push_back(std::move(ax));
  }
  for (const Given& g : given_params(a)) axes.push_back({g.name, tuner::axis_values(g.flag, g.text, integer_param(g.name))});
  return axes;
}

// fp8 needs the model's shapes in whole 128 blocks after --tp; a model served in fp8 but tuned in
// another dtype is said once (a sweep builds many problems), never silently.
void fp8_checks(const FamilyDesc& f, const Params& model, const Params& p, int tp, const std::string& name) {
  const bool fp8 = p.has("dtype") && p.s("dtype") == "fp8";
  if (fp8) tuner::check_fp8_model(model, p, tp);
  const ParamSpec* dt = f.problem_param("dtype");
  const bool can_fp8 = dt && std::find(dt->choices.begin(), dt->choices.end(), "fp8") != dt->choices.end();
  static bool told = false;
  if (!fp8 && can_fp8 && model.has("quant") && model.s("quant") == "fp8" && !told) {
    told = true;
    std::fprintf(stderr, "moebench: note: %s is served in fp8 (block-scaled W8A8); this run uses dtype=%s: add --dtype fp8 to tune what it runs\n",
                 name.c_str(), p.s("dtype").c_str());
  }
  // The 4-bit formats (docs/w4.md) the same way.
  const std::string dtype = p.has("dtype") ? p.s("dtype") : "";
  if (dtype == "mxfp4" || dtype == "int4") tuner::check_w4_model(model, p, tp);
  const std::string quant = model.has("quant") ? model.s("quant") : "";
  const bool can_quant = dt && std::find(dt->choices.begin(), dt->choices.end(), quant) != dt->choices.end();
  if ((quant == "mxfp4" || quant == "int4") && dtype != quant && can_quant && !told) {
    told = true;
    const std::string what = quant == "mxfp4" ? "mxfp4 (4-bit e2m1 weights, an e8m0 scale per 32, bf16 activations)"
                                              : "int4 (W4A16, a bf16 scale per " + std::to_string(model.i("group")) + (model.b("zero_point") ? ", zero points" : ", symmetric") + ")";
    std::fprintf(stderr, "moebench: note: %s is served in %s; this run uses dtype=%s: add --dtype %s to tune what it runs\n",
                 name.c_str(), what.c_str(), dtype.c_str(), quant.c_str());
  }
}

std::string value_of(const tuner::AxisValues& c, const std::string& name) {
  for (auto& [n, v] : c)
    if (n == name) return v;
  return {};
}

}  // namespace

std::vector<tuner::Axis> multi_axes(const ProblemArgs& a) {
  std::vector<tuner::Axis> out;
  for (auto& ax : all_axes(a))
    if (ax.values.size() > 1) out.push_back(ax);
  return out;
}

std::vector<ProblemChoice> problem_choices(const FamilyDesc& f, const ProblemArgs& a, bool strict) {
  const std::vector<tuner::Axis> axes = all_axes(a);
  std::vector<std::vector<std::string>> zip;
  // A name is spelled as its flag or as its parameter (hf-config or hf_config), as every flag is.
  for (auto& z : a.zip) {
    zip.push_back(tuner::axis_values("--zip", z, false));
    for (std::string& n : zip.back()) std::replace(n.begin(), n.end(), '-', '_');
  }
  const std::vector<tuner::AxisValues> combos = tuner::expand_axes(axes, zip);
  std::map<std::string, Params> models;  // loaded once per preset, unsharded
  for (auto& ax : axes)
    if (ax.name == "model" || ax.name == "hf_config")
      for (auto& v : ax.values) models[v] = ax.name == "model" ? tuner::load_model(v) : tuner::load_hf_config(v);
  const std::vector<Given> given = given_params(a);
  std::vector<ProblemChoice> out;
  for (const tuner::AxisValues& c : combos) {
    ProblemChoice pc;
    for (auto& ax : axes)
      if (ax.values.size() > 1) pc.axes.push_back({ax.name, value_of(c, ax.name)});
    // A value that is no value of its parameter is the user's to fix, whatever else is given.
    Params overrides, model_overrides;
    for (const Given& g : given) {
      const ParamSpec* spec = f.problem_param(g.name);
      if (!spec && strict) throw Error("family '" + f.name + "' has no parameter '" + g.name + "'");
      // Another family's parameter still shapes the model this family's problem comes from.
      model_overrides.set(g.name, parse_value(spec_of(f, g.name), value_of(c, g.name)));
      if (spec) overrides.set(g.name, parse_value(*spec, value_of(c, g.name)));
    }
    const int tp = std::stoi(value_of(c, "tp")), ep = std::stoi(value_of(c, "ep"));
    const std::string model = value_of(c, a.model.empty() ? "hf_config" : "model");
    if (model.empty() && (tp != 1 || ep != 1)) throw Error("--tp/--ep shard a model: give --model or --hf-config too");
    try {
      if (model.empty()) {
        pc.problem = tuner::problem_for(f, Params{}, overrides, strict);
      } else {
        // The overrides replace the model's values before --tp and --ep divide them: --experts
        // 64 --ep 8 gives each rank 8 experts, whatever the preset's own count.
        Params m = models.at(model);
        for (auto& [k, v] : model_overrides.values())
          if (m.has(k)) m.set(k, v);
        m = tuner::apply_parallelism(m, tp, ep, a.ep_rank);
        for (const char* k : {"expert_begin", "expert_end"})
          if (m.has(k)) pc.slice.set(k, m.at(k));
        Params rest;
        for (auto& [k, v] : overrides.values())
          if (!m.has(k)) rest.set(k, v);
        pc.problem = tuner::problem_for(f, m, rest, strict);
        fp8_checks(f, m, pc.problem, tp, model);
      }
    } catch (const Error& e) {
      if (combos.size() == 1) throw;
      pc.problem = Params{};
      pc.skip = e.what();
    }
    out.push_back(std::move(pc));
  }
  return out;
}

Params problem_params(const FamilyDesc& f, const ProblemArgs& a, bool strict) {
  for (auto& ax : multi_axes(a))
    throw Error("--" + (ax.name == "hf_config" ? std::string("hf-config") : ax.name) + " has " +
                std::to_string(ax.values.size()) + " values: this command takes one problem (lists are for `moebench sweep`)");
  return problem_choices(f, a, strict).front().problem;
}

}  // namespace moe::app
