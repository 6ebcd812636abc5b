#include "tuner/store/field_types.hpp"

#include <map>

namespace moe::tuner {

namespace {

// s string, i integer, n number or null (NaN is written as null), r number, b boolean, o object, O object or null, a array, S array of
// strings, N array of numbers, c a choice (point: winner, runner_up, default, chosen), t the
// meta's timer, A a point's problem axes ({name: value} of strings), L the axes of a sweep
// ([{name, values: [strings]}]), P a journal header's plan (its axes an L, its units' an A),
// H a header's shard ({index, count} integers), R a header's settings (its rule an object), Y a
// point's side_by_side (ours and peer each a choice or null, peer_over_ours a number or null).
using Kinds = std::map<std::string, char>;

const Kinds& kinds(FieldSet set) {
  static const Kinds strings_of_every_set = {
      {"kernel", 's'},  {"family", 's'}, {"problem_key", 's'}, {"config_key", 's'}, {"status", 's'},
      {"error", 's'},   {"reason", 's'}, {"note", 's'},        {"point", 's'},      {"type", 's'},
      {"schema", 's'},  {"device", 's'}, {"backend", 's'},     {"phase", 's'},
  };
  static const auto with = [](Kinds extra) {
    for (auto& kv : strings_of_every_set) extra.insert(kv);
    return extra;
  };
  static const Kinds journal = with({{"binary", 's'}, {"fingerprint", 's'}, {"timer", 's'}, {"round", 'i'},
                                     {"point_index", 'i'}, {"cand_index", 'i'}, {"tokens", 'i'}, {"evaluated", 'i'},
                                     {"total", 'i'}, {"rounds", 'i'}, {"prepare_s", 'r'}, {"bytes", 'r'},
                                     {"flops", 'r'}, {"incumbent_us", 'r'}, {"call_us", 'r'}, {"early_stop", 'b'},
                                     {"budget_hit", 'b'}, {"is_default", 'b'}, {"retry", 'b'}, {"samples_us", 'N'},
                                     {"validation", 'O'}, {"plan", 'P'}, {"settings", 'R'}, {"problem", 'o'},
                                     {"config", 'O'}, {"resolved_config", 'O'}, {"config_source", 'O'},
                                     {"axes", 'A'}, {"skipped", 'b'}, {"shard", 'H'}, {"peer", 's'},
                                     {"graph", 'o'}});
  static const Kinds record = with({{"timer", 's'}, {"tokens", 'i'}, {"rounds", 'i'}, {"stats", 'o'},
                                    {"is_default", 'b'}, {"early_stop", 'b'}, {"validation", 'O'}, {"problem", 'O'},
                                    {"config", 'O'}, {"resolved_config", 'O'}, {"config_source", 'O'}, {"gbps", 'n'},
                                    {"tflops", 'n'}, {"pct_peak", 'n'}, {"axes", 'A'}, {"peer", 's'},
                                    {"timing", 's'}, {"graph", 'o'}, {"pdl", 'i'}});
  static const Kinds point = with({{"tokens", 'i'}, {"point_index", 'i'}, {"evaluated", 'i'}, {"total", 'i'},
                                   {"rounds", 'i'}, {"timed", 'i'}, {"not_usable", 'i'}, {"budget_hit", 'b'},
                                   {"kept_default", 'b'}, {"speedup_vs_default", 'r'}, {"gbps", 'n'}, {"tflops", 'n'},
                                   {"pct_peak", 'n'}, {"winner", 'c'}, {"runner_up", 'c'}, {"default", 'c'},
                                   {"chosen", 'c'}, {"axes", 'A'}, {"skipped", 'b'}, {"side_by_side", 'Y'},
                                   {"fastest_not_dispatchable", 'c'}});
  static const Kinds meta = with({{"device_slug", 's'}, {"strategy", 's'}, {"version", 's'}, {"git", 's'},
                                  {"command", 's'}, {"results_path", 's'}, {"cuda_runtime", 's'}, {"driver", 's'},
                                  {"wall_s", 'r'}, {"copy_bw_gbps", 'r'}, {"sm_count", 'i'}, {"seed", 'i'},
                                  {"resumed", 'b'}, {"timer", 't'}, {"skipped", 'S'}, {"axes", 'L'}});
  switch (set) {
    case FieldSet::journal_line: return journal;
    case FieldSet::record: return record;
    case FieldSet::point: return point;
    default: return meta;
  }
}

const char* kind_name(char k) {
  switch (k) {
    case 's': return "a string";
    case 'i': return "an integer";
    case 'n':
    case 'r': return "a number";
    case 'b': return "true or false";
    case 'o': return "an object";
    case 'O': return "an object";
    case 'S': return "a list of strings";
    case 'N': return "a list of numbers";
    case 'c': return "an object with config, config_key and median_us";
    case 't': return "an object with mode, used and notes";
    case 'A': return "an object of axis names and string values";
    case 'L': return "a list of {name, values} objects of strings";
    case 'P': return "an object whose axes are a list of {name, values} and whose units are objects";
    case 'H': return "an object with integer index and count";
    case 'R': return "an object whose rule is an object";
    case 'Y': return "an object whose ours and peer are null or objects with config, config_key and median_us";
    default: return "a list";
  }
}

bool all_of(const json& v, bool (json::*is)() const noexcept) {
  if (!v.is_array()) return false;
  for (auto& x : v)
    if (!(x.*is)()) return false;
  return true;
}

bool axis_values(const json& v) {
  if (!v.is_object()) return false;
  for (auto& [n, x] : v.items())
    if (!x.is_string()) return false;
  return true;
}

bool axes_list(const json& v) {
  if (!v.is_array()) return false;
  for (auto& a : v)
    if (!a.is_object() || !a.contains("name") || !a["name"].is_string() || !a.contains("values") ||
        !all_of(a["values"], &json::is_string))
      return false;
  return true;
}

bool fits(const json& v, char k) {
  switch (k) {
    case 's': return v.is_string();
    case 'i': return v.is_number_integer();
    case 'n': return v.is_number() || v.is_null();
    case 'r': return v.is_number();
    case 'b': return v.is_boolean();
    case 'o': return v.is_object();
    case 'O': return v.is_object() || v.is_null();
    case 'S': return all_of(v, &json::is_string);
    case 'N': return all_of(v, &json::is_number);
    case 'c':
      if (!v.is_object()) return false;
      if (v.contains("config_key") && !v["config_key"].is_string()) return false;
      if (v.contains("median_us") && !v["median_us"].is_number()) return false;
      if (v.contains("resolved_config") && !v["resolved_config"].is_object()) return false;
      if (v.contains("peer") && !v["peer"].is_string()) return false;
      if (v.contains("stats") && (!v["stats"].is_object() || !v["stats"].value("median_us", json(0.0)).is_number()))
        return false;
      return !v.contains("config") || v["config"].is_object();
    case 't':
      return v.is_object() && (!v.contains("mode") || v["mode"].is_string()) &&
             (!v.contains("used") || v["used"].is_string()) && (!v.contains("notes") || all_of(v["notes"], &json::is_string));
    case 'A': return axis_values(v);
    case 'L': return axes_list(v);
    case 'P':
      if (v.is_null()) return true;
      if (!v.is_object() || (v.contains("axes") && !axes_list(v["axes"]))) return false;
      if (!v.contains("units")) return true;
      if (!v["units"].is_array()) return false;
      for (auto& u : v["units"])
        if (!u.is_object() || (u.contains("axes") && !axis_values(u["axes"])) || (u.contains("kernel") && !u["kernel"].is_string()))
          return false;
      return true;
    case 'H':
      return v.is_object() && (!v.contains("index") || v["index"].is_number_integer()) &&
             (!v.contains("count") || v["count"].is_number_integer());
    case 'R': return v.is_null() || (v.is_object() && (!v.contains("rule") || v["rule"].is_object()));
    case 'Y':
      if (!v.is_object()) return false;
      for (const char* side : {"ours", "peer"}) {
        if (!v.contains(side) || v[side].is_null()) continue;
        const json& c = v[side];
        if (!fits(c, 'c') || (c.contains("name") && !c["name"].is_string()) ||
            (c.contains("backend") && !c["backend"].is_string()))
          return false;
      }
      return (!v.contains("peer_over_ours") || v["peer_over_ours"].is_number() || v["peer_over_ours"].is_null()) &&
             (!v.contains("note") || v["note"].is_string());
    default: return v.is_array();
  }
}

}  // namespace

std::string field_type_fault(const json& obj, FieldSet set) {
  if (!obj.is_object()) return "";
  const Kinds& ks = kinds(set);
  for (auto& [name, v] : obj.items()) {
    const auto it = ks.find(name);
    if (it != ks.end() && !fits(v, it->second))
      return name + " is " + v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 40) + ", not " +
             kind_name(it->second);
  }
  return "";
}

}  // namespace moe::tuner
