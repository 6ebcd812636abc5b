#pragma once
// Problems and configs are both sets of named values described by ParamSpecs, so every
// command (run, sweep, list, lookup) handles every family the same way.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace moe {

using Value = std::variant<std::int64_t, double, std::string>;
std::string value_str(const Value& v);

enum class ParamKind { Int, Float, Choice, Bool, Text };

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::Int;
  Value default_value;
  std::string help;
  std::vector<std::string> choices;  // Choice: allowed strings
  // Choice: other spellings accepted on input and stored as the canonical choice.
  std::vector<std::pair<std::string, std::string>> aliases;
  std::int64_t min = INT64_MIN;      // Int: inclusive range
  std::int64_t max = INT64_MAX;
  double above = -HUGE_VAL;  // Float: values must be greater than this
};

// Builders for the specs every family declares.
ParamSpec int_param(std::string name, std::int64_t def, std::int64_t lo, std::int64_t hi, std::string help);
ParamSpec choice_param(std::string name, std::string def, std::vector<std::string> choices, std::string help);

class Params {
 public:
  Params() = default;
  Params(std::initializer_list<std::pair<const std::string, Value>> init) : values_(init) {}

  bool has(const std::string& k) const { return values_.count(k) != 0; }
  const Value& at(const std::string& k) const;  // Error naming the key when missing
  std::int64_t i(const std::string& k) const;
  double f(const std::string& k) const;  // ints widen
  const std::string& s(const std::string& k) const;
  bool b(const std::string& k) const { return i(k) != 0; }
  Params& set(const std::string& k, Value v) {
    values_[k] = std::move(v);
    return *this;
  }
  void erase(const std::string& k) { values_.erase(k); }
  const std::map<std::string, Value>& values() const { return values_; }

  // "k1=v1,k2=v2" in key order: stable, used as a record and table key.
  std::string str() const;
  bool operator==(const Params& o) const { return values_ == o.values_; }
  bool operator<(const Params& o) const { return values_ < o.values_; }

 private:
  std::map<std::string, Value> values_;
};

// Parses text for a spec (ints, floats, choices, bools as 0/1/true/false) or throws an
// Error that names the parameter and lists what is allowed.
Value parse_value(const ParamSpec& spec, const std::string& text);
// Checks a value against its spec (range, choices), throwing a descriptive Error.
void check_value(const ParamSpec& spec, const Value& v);
// Fills missing keys with spec defaults and checks every value; unknown keys are an Error.
Params complete(const std::vector<ParamSpec>& specs, const Params& given, const std::string& what);
// Parses "a=1,b=x" (used for --config and table keys).
Params parse_assignments(const std::vector<ParamSpec>& specs, const std::string& text,
                         const std::string& what);

}  // namespace moe
