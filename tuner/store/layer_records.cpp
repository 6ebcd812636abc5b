#include "tuner/store/layer_records.hpp"

#include "moe/error.hpp"
#include "runtime/params_json.hpp"
#include "tuner/search/layer_units.hpp"

namespace moe::tuner {

std::vector<std::string> stale_layer_records(const json& results, const std::string& dir) {
  std::vector<std::string> out;
  const json& meta = results.value("meta", json::object());
  DeviceInfo dev;
  dev.backend = parse_backend(meta.value("backend", "cpu"));
  dev.name = meta.value("device", "");
  dev.sm_count = meta.value("sm_count", 0);
  for (auto& r : results.value("records", json::array())) {
    if (r.value("kernel", "") != "moe-layer" || !r.contains("resolved_config") || r.value("status", "") != "ok") continue;
    try {
      Params problem = runtime::params_from_json(r.value("problem", json::object()), "record problem");
      problem.set("tokens", r.value("tokens", std::int64_t{0}));
      const Params config = runtime::params_from_json(r.value("config", json::object()), "record config");
      const ResolvedConfig now = resolve_layer_config(dev.backend, problem, config, dev, {dir});
      const json was = r["resolved_config"], is = runtime::params_to_json(now.config);
      if (was == is) continue;
      std::string diff;
      for (auto& [k, v] : is.items())
        if (!was.contains(k) || was[k] != v)
          diff += (diff.empty() ? "" : ", ") + k + " " + (was.contains(k) ? was[k].dump() : "(none)") + " -> " + v.dump();
      out.push_back("T=" + std::to_string(r.value("tokens", 0)) + " " + r.value("config_key", "") + ": " + diff);
    } catch (const Error&) {
      // A record this build cannot resolve is not one the merged tables could refresh.
    }
  }
  return out;
}

}  // namespace moe::tuner
