#include "tuner/search/space_file.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "io/json_text.hpp"
#include "io/read_file.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"

namespace moe::tuner {

namespace {

using json = nlohmann::json;

std::string names_of(const std::vector<ParamSpec>& specs) {
  std::string r;
  for (auto& s : specs) r += (r.empty() ? "" : ", ") + s.name;
  return r;
}

bool has_param(const std::vector<ParamSpec>& specs, const std::string& name) {
  return std::any_of(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == name; });
}

// Every key of every config in `list` must be a config parameter of one of `owners`.
void check_configs(const std::string& path, const json& list, const std::string& where,
                   const std::vector<const FamilyDesc*>& owners, Backend b) {
  if (!list.is_array()) throw Error("--space " + path + ": " + where + " is not a JSON list of configs");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& item = list[i];
    if (!item.is_object())
      throw Error("--space " + path + ": " + where + " item " + std::to_string(i) + " is " + item.dump() +
                  ", not a config object like {\"NAME\": VALUE}");
    for (auto& [key, value] : item.items()) {
      bool known = false;
      std::string have;
      for (const FamilyDesc* f : owners) {
        const BackendImpl* impl = f->backend(b);
        if (!impl) continue;
        known = known || has_param(impl->config_params, key);
        have += (have.empty() ? "" : "; ") + f->name + ": " + names_of(impl->config_params);
      }
      if (!known)
        throw Error("--space " + path + ": " + where + " config " + std::to_string(i) + " " + item.dump() +
                    " names '" + key + "', which is not a " + std::string(backend_name(b)) +
                    " config parameter (" + have + "; see `moebench list FAMILY`)");
    }
  }
}

}  // namespace

json read_space_file(const std::string& path, const std::vector<const FamilyDesc*>& swept, Backend b) {
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    throw Error("--space " + path + " " + why + ": give default, full, or a JSON file of configs");
  std::string text, why;
  if (!io::read_whole_file(path, text, why))
    throw Error("--space " + path + ": cannot read it (" + why + "): use default, full, or a JSON file of configs");
  io::check_json_text(text, "--space " + path, "give a JSON list of configs or an object {family: [configs]}");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    j = nullptr;
  }
  if (j.is_array()) {
    check_configs(path, j, "the list", swept, b);
    return j;
  }
  if (!j.is_object())
    throw Error("--space " + path + " is not a JSON list of configs (e.g. [{\"tile\": 16}]) or an object {family: [configs]}");
  for (auto& [name, list] : j.items()) {
    const auto it = std::find_if(families().begin(), families().end(), [&](const FamilyDesc* f) { return f->name == name; });
    if (it == families().end()) {
      std::string known;
      for (const FamilyDesc* f : families()) known += (known.empty() ? "" : ", ") + f->name;
      throw Error("--space " + path + ": '" + name + "' is not a kernel family (they are: " + known + ")");
    }
    if (std::find(swept.begin(), swept.end(), *it) != swept.end()) check_configs(path, list, name + "'s list", {*it}, b);
  }
  return j;
}

}  // namespace moe::tuner
