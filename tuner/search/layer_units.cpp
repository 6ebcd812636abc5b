#include "tuner/search/layer_units.hpp"

#include "layer/stage_configs.hpp"
#include "layer/stages.hpp"

namespace moe::tuner {

std::vector<SweepUnit> layer_units(const Params& L, const Params& slice, Backend b, std::vector<std::string>& warnings) {
  const FamilyDesc& layer = family("moe-layer");
  std::vector<SweepUnit> units;
  for (const Stage& st : layer_stages(L)) {
    const FamilyDesc& f = family(st.family);
    Params problem = st.problem;
    for (auto& [k, v] : slice.values())
      if (f.problem_param(k)) problem.set(k, v);
    if (f.backend(b)) units.push_back({&f, problem, {}, {}, {}});
    else warnings.push_back(f.name + " has no " + std::string(backend_name(b)) + " backend in this build: not swept");
  }
  if (layer.backend(b)) {
    Params every_default;
    for (const Stage& st : layer_stages(L)) every_default.set(st.name, std::string("default"));
    units.push_back({&layer, L, {}, {},
                     [b](const Params& problem, const Params& config, const DeviceInfo& dev,
                         const std::vector<std::string>& dirs) { return resolve_layer_config(b, problem, config, dev, dirs); },
                     every_default, true});
  } else {
    warnings.push_back(layer.name + " has no " + std::string(backend_name(b)) + " backend in this build: not swept");
  }
  return units;
}

ResolvedConfig resolve_layer_config(Backend b, const Params& problem, const Params& config, const DeviceInfo& dev,
                                    const std::vector<std::string>& dirs) {
  // Quiet: the runner reports the warnings once per sweep, above its progress lines.
  const ResolvedLayer rl = resolve_layer(b, problem, config, dev, dirs, true);
  ResolvedConfig r;
  r.config = config;
  r.source = json::object();
  for (std::size_t i = 0; i < rl.stages.size(); ++i) {
    const Stage& st = rl.stages[i];
    const StageChoice& ch = rl.choices[i];
    r.config.set(st.name, stage_config_text(ch.config));
    json s = {{"family", st.family}, {"config", params_to_json(ch.config)}, {"how", ch.how}};
    if (ch.how != "explicit" && ch.how != "family default") s["table"] = ch.table;
    if (ch.how == "exact" || ch.how == "nearest") s["table_tokens"] = ch.key;
    r.source[st.name] = std::move(s);
    if (!ch.warning.empty()) r.warnings.push_back("stage " + st.name + ": " + ch.warning);
  }
  return r;
}

}  // namespace moe::tuner
