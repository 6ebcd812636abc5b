#include "runtime/params_json.hpp"

#include "moe/error.hpp"

namespace moe::runtime {

nlohmann::json params_to_json(const Params& p) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [k, v] : p.values()) {
    if (auto i = std::get_if<std::int64_t>(&v)) j[k] = *i;
    else if (auto d = std::get_if<double>(&v)) j[k] = *d;
    else j[k] = std::get<std::string>(v);
  }
  return j;
}

Params params_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + " is not a JSON object of parameters");
  Params p;
  for (auto& [k, v] : j.items()) {
    if (v.is_number_integer()) p.set(k, v.get<std::int64_t>());
    else if (v.is_number_float()) p.set(k, v.get<double>());
    else if (v.is_string()) p.set(k, v.get<std::string>());
    else if (v.is_boolean()) p.set(k, std::int64_t{v.get<bool>() ? 1 : 0});
    else throw Error(what + ": parameter '" + k + "' is " + v.dump() + ", expected a number or a word");
  }
  return p;
}

}  // namespace moe::runtime
