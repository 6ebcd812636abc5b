#include "moe/params.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "moe/error.hpp"

namespace moe {

ParamSpec int_param(std::string name, std::int64_t def, std::int64_t lo, std::int64_t hi, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.kind = ParamKind::Int;
  s.default_value = def;
  s.min = lo;
  s.max = hi;
  s.help = std::move(help);
  return s;
}

ParamSpec choice_param(std::string name, std::string def, std::vector<std::string> choices, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.kind = ParamKind::Choice;
  s.default_value = std::move(def);
  s.choices = std::move(choices);
  s.help = std::move(help);
  return s;
}

std::string value_str(const Value& v) {
  if (auto p = std::get_if<std::int64_t>(&v)) return std::to_string(*p);
  if (auto p = std::get_if<double>(&v)) {
    // Shortest text that reads back as the same double: keys and tables stay readable.
    char buf[32];
    for (int prec = 6; prec <= 17; ++prec) {
      std::snprintf(buf, sizeof buf, "%.*g", prec, *p);
      if (std::strtod(buf, nullptr) == *p) break;
    }
    return buf;
  }
  return std::get<std::string>(v);
}

const Value& Params::at(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw Error("parameter '" + k + "' is not set (have: " + str() + ")");
  return it->second;
}

std::int64_t Params::i(const std::string& k) const {
  const Value& v = at(k);
  if (auto p = std::get_if<std::int64_t>(&v)) return *p;
  throw Error("parameter '" + k + "' is '" + value_str(v) + "', expected an integer");
}

double Params::f(const std::string& k) const {
  const Value& v = at(k);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<std::int64_t>(&v)) return static_cast<double>(*p);
  throw Error("parameter '" + k + "' is '" + value_str(v) + "', expected a number");
}

const std::string& Params::s(const std::string& k) const {
  const Value& v = at(k);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw Error("parameter '" + k + "' is '" + value_str(v) + "', expected a word");
}

std::string Params::str() const {
  std::string r;
  for (auto& [k, v] : values_) r += (r.empty() ? "" : ",") + k + "=" + value_str(v);
  return r;
}

static std::string choices_str(const ParamSpec& spec) {
  std::string r;
  for (auto& c : spec.choices) r += (r.empty() ? "" : "|") + c;
  return r;
}

Value parse_value(const ParamSpec& spec, const std::string& text) {
  auto bad = [&](const std::string& want) {
    return Error("--" + spec.name + " '" + text + "' is not " + want);
  };
  Value v;
  switch (spec.kind) {
    case ParamKind::Int: {
      std::int64_t x{};
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
      if (ec != std::errc() || p != text.data() + text.size()) throw bad("an integer");
      v = x;
      break;
    }
    case ParamKind::Float: {
      char* end = nullptr;
      const double x = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(x)) throw bad("a finite number");
      v = x;
      break;
    }
    case ParamKind::Bool:
      if (text == "1" || text == "true" || text == "yes" || text == "on") v = std::int64_t{1};
      else if (text == "0" || text == "false" || text == "no" || text == "off") v = std::int64_t{0};
      else throw bad("a boolean (0/1/true/false)");
      break;
    case ParamKind::Choice:
    case ParamKind::Text:
      v = text;
      for (auto& [alias, canonical] : spec.aliases)
        if (text == alias) v = canonical;
      break;
  }
  check_value(spec, v);
  return v;
}

void check_value(const ParamSpec& spec, const Value& v) {
  switch (spec.kind) {
    case ParamKind::Int:
    case ParamKind::Bool: {
      auto p = std::get_if<std::int64_t>(&v);
      if (!p) throw Error("parameter '" + spec.name + "' must be an integer, got '" + value_str(v) + "'");
      const std::int64_t lo = spec.kind == ParamKind::Bool ? 0 : spec.min;
      const std::int64_t hi = spec.kind == ParamKind::Bool ? 1 : spec.max;
      if (*p < lo || *p > hi)
        throw Error("parameter '" + spec.name + "' = " + std::to_string(*p) + " is out of range [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + "]");
      break;
    }
    case ParamKind::Float: {
      double x = 0;
      if (auto p = std::get_if<double>(&v)) x = *p;
      else if (auto q = std::get_if<std::int64_t>(&v)) x = static_cast<double>(*q);
      else throw Error("parameter '" + spec.name + "' must be a number, got '" + value_str(v) + "'");
      if (!(x > spec.above))
        throw Error("parameter '" + spec.name + "' = " + value_str(v) + " must be greater than " + value_str(spec.above) +
                    " (" + spec.help + ")");
      break;
    }
    case ParamKind::Text:
      if (!std::get_if<std::string>(&v))
        throw Error("parameter '" + spec.name + "' must be text, got '" + value_str(v) + "'");
      break;
    case ParamKind::Choice: {
      auto p = std::get_if<std::string>(&v);
      bool ok = false;
      if (p)
        for (auto& c : spec.choices) ok = ok || c == *p;
      if (!ok)
        throw Error("parameter '" + spec.name + "' = '" + value_str(v) + "' is not one of " + choices_str(spec));
      break;
    }
  }
}

Params complete(const std::vector<ParamSpec>& specs, const Params& given, const std::string& what) {
  Params out;
  for (auto& [k, v] : given.values()) {
    bool known = false;
    for (auto& s : specs) known = known || s.name == k;
    if (!known) {
      std::string names;
      for (auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      throw Error(what + " has no parameter '" + k + "' (it has: " + names + ")");
    }
  }
  for (auto& s : specs) {
    Value v = given.has(s.name) ? given.at(s.name) : s.default_value;
    if (s.kind == ParamKind::Float)
      if (auto p = std::get_if<std::int64_t>(&v)) v = static_cast<double>(*p);
    check_value(s, v);
    out.set(s.name, v);
  }
  return out;
}

Params parse_assignments(const std::vector<ParamSpec>& specs, const std::string& text, const std::string& what) {
  Params p;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error(what + ": '" + item + "' is not NAME=VALUE");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    const ParamSpec* spec = nullptr;
    for (auto& s : specs)
      if (s.name == k) spec = &s;
    if (!spec) {
      std::string names;
      for (auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      throw Error(what + " has no parameter '" + k + "' (it has: " + names + ")");
    }
    p.set(k, parse_value(*spec, v));
  }
  return p;
}

}  // namespace moe
