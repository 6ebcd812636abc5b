#pragma once
// The fields of a JSON document that a writer produced, and the hostile values a reader may
// find in their place. The writer-driven fuzz mutates what the writers just wrote, so a field
// is fuzzed from the day a writer first writes it; no list of fields to keep up to date.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::testing {

using nlohmann::json;

// Each field under a name that stands for all its places: list indices and token-count keys
// (a table's entries, "16") become '*', so a journal's twenty eval lines give one set of names.
// `name` starts as the document's own name among those of its file (a journal line's type).
inline void collect_fields(const json& v, const json::json_pointer& at, const std::string& name,
                           std::map<std::string, std::vector<json::json_pointer>>& out) {
  if (!at.empty()) out[name].push_back(at);
  if (v.is_object()) {
    for (auto& [k, x] : v.items()) {
      const bool count = !k.empty() && k.find_first_not_of("0123456789") == std::string::npos;
      collect_fields(x, at / k, name + "/" + (count ? "*" : k), out);
    }
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect_fields(v[i], at / i, name + "/*", out);
  }
}

// What a field is replaced by; every kind applies to every field.
enum class Hostile { scalar_swap, container_swap, null, huge, negative, deep, empty };
inline constexpr int kHostileKinds = 7;

inline const char* hostile_name(int kind) {
  static const char* names[] = {"scalar-swap", "container-swap", "null", "huge", "negative", "deep", "empty"};
  return names[kind];
}

inline json hostile_value(const json& v, int kind) {
  switch (static_cast<Hostile>(kind)) {
    case Hostile::scalar_swap:  // a scalar of another type
      if (v.is_string()) return 7;
      if (v.is_number()) return v.is_number_integer() ? json("7") : json(true);
      return "x";
    case Hostile::container_swap:  // a container of another type, its element of yet another
      if (v.is_object()) return json::array({7});
      if (v.is_array()) return json::object({{"k", 7}});
      return v.is_string() ? json::array({7}) : json::array({"x"});
    case Hostile::null: return nullptr;
    case Hostile::huge:
      if (v.is_number_integer() || v.is_boolean()) return std::numeric_limits<std::uint64_t>::max();
      if (v.is_number()) return 1e308;
      if (v.is_string()) return std::string(100000, 'x');
      if (v.is_array()) {
        json a = json::array();
        for (int i = 0; i < 2000; ++i) a.push_back(v.empty() ? json(i) : v[static_cast<std::size_t>(i) % v.size()]);
        return a;
      } else {
        json o = v.is_object() ? v : json::object();
        for (int i = 0; i < 500; ++i) o["k" + std::to_string(i)] = i;
        return o;
      }
    case Hostile::negative:
      if (v.is_number_integer()) return std::numeric_limits<std::int64_t>::min();
      if (v.is_number()) return -1e308;
      return -1;
    case Hostile::deep: {
      // Deep, yet within the depth the readers parse (kMaxJsonDepth), so the readers meet it.
      json d = v;
      for (int i = 0; i < 100; ++i) d = json::array({d});
      return d;
    }
    default:
      if (v.is_string()) return "";
      if (v.is_array()) return json::array();
      if (v.is_object()) return json::object();
      if (v.is_boolean()) return false;
      if (v.is_number()) return 0;
      return "";
  }
}

}  // namespace moe::testing
