#include "tuner/measure/json_io.hpp"

#include <algorithm>
#include <cmath>

#include "moe/error.hpp"

namespace moe::tuner {

// JSON has no inf/NaN: a rule's "no noise limit" travels as null.
static json num_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
static double num_or_inf(const json& j, const char* k, double def) {
  if (!j.contains(k)) return def;
  return j[k].is_null() ? INFINITY : j[k].get<double>();
}

json to_json(const Stats& s) {
  return {{"n", s.n},           {"min_us", s.min_us},     {"q1_us", s.q1_us},       {"median_us", s.median_us},
          {"q3_us", s.q3_us},   {"max_us", s.max_us},     {"mean_us", s.mean_us},   {"stdev_us", s.stdev_us},
          {"noise", s.noise}};
}

Stats stats_from_json(const json& j) {
  // NaN statistics are written as null (JSON has no NaN): a null reads back as "none".
  const auto num = [&](const char* k, double def) {
    return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : def;
  };
  Stats s;
  s.n = static_cast<int>(std::clamp(num("n", 0), 0.0, 1e9));  // a count, whatever the file says
  s.min_us = num("min_us", 0.0);
  s.q1_us = num("q1_us", 0.0);
  s.median_us = num("median_us", 0.0);
  s.q3_us = num("q3_us", 0.0);
  s.max_us = num("max_us", 0.0);
  s.mean_us = num("mean_us", 0.0);
  s.stdev_us = num("stdev_us", 0.0);
  s.noise = num("noise", 0.0);
  return s;
}

json to_json(const Validation& v) {
  json checks = json::array();
  for (auto& c : v.checks)
    checks.push_back({{"tensor", c.tensor},
                      {"ok", c.ok},
                      {"max_abs", num_or_null(c.max_abs)},
                      {"max_rel", num_or_null(c.max_rel)},
                      {"rel_l2", num_or_null(c.rel_l2)},
                      {"tolerance", num_or_null(c.tolerance)},
                      {"mismatches", c.mismatches},
                      {"nans", c.nans},
                      {"unwritten", c.unwritten},
                      {"detail", c.detail}});
  return {{"ok", v.ok}, {"summary", v.summary()}, {"checks", checks}};
}

json to_json(const StopRule& r) {
  return {{"min_samples", r.min_samples}, {"max_samples", r.max_samples},
          {"max_noise", num_or_null(r.max_noise)}, {"min_time_s", r.min_time_s},
          {"max_time_s", r.max_time_s},   {"early_stop_ratio", r.early_stop_ratio}};
}

StopRule stop_rule_from_json(const json& j) {
  StopRule r;
  r.min_samples = j.value("min_samples", r.min_samples);
  r.max_samples = j.value("max_samples", r.max_samples);
  r.max_noise = num_or_inf(j, "max_noise", r.max_noise);
  r.min_time_s = j.value("min_time_s", r.min_time_s);
  r.max_time_s = j.value("max_time_s", r.max_time_s);
  r.early_stop_ratio = j.value("early_stop_ratio", r.early_stop_ratio);
  return r;
}

json parse_line(const std::string& line, const std::string& what) {
  try {
    return json::parse(line);
  } catch (const json::exception& e) {
    throw Error(what + " is not valid JSON (" + e.what() + ")");
  }
}

}  // namespace moe::tuner
