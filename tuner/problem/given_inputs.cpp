#include "tuner/problem/given_inputs.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "moe/error.hpp"

namespace moe::tuner {

namespace {

// The dtype input `name` has when the problem's dtype is `dtype`; none when that problem is refused.
std::optional<DType> dtype_with(const FamilyDesc& f, Params problem, const std::string& dtype, const std::string& name) {
  problem.set("dtype", dtype);
  try {
    for (const TensorSpec& s : f.input_specs(problem))
      if (s.name == name) return s.dtype;
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::string advice(const FamilyDesc& f, const Params& problem, const std::string& name, DType want, DType got) {
  const std::string to = "convert the file to " + std::string(dtype_name(want));
  const ParamSpec* spec = f.problem_param("dtype");
  if (!spec) return to;
  const std::vector<std::string>& choices = spec->choices;
  const std::string g(dtype_name(got));
  // The input follows the problem's dtype when setting that dtype sets the input's.
  if (std::find(choices.begin(), choices.end(), g) != choices.end() && dtype_with(f, problem, g, name) == got)
    return to + ", or set the problem's dtype to match: --dtype " + g;
  // e4m3 codes are what the fp8 problem takes.
  if (got == DType::e4m3 && std::find(choices.begin(), choices.end(), "fp8") != choices.end() &&
      dtype_with(f, problem, "fp8", name) == got)
    return to + ", or set the problem's dtype to match: --dtype fp8";
  auto tensor_dtype = [](const std::string& c) -> std::optional<DType> {
    try {
      return parse_dtype(c);
    } catch (const Error&) {
      return std::nullopt;  // fp8 names a recipe, not one tensor type
    }
  };
  bool follows = false;
  for (const std::string& c : choices)
    follows = follows || (c != dtype_name(want) && tensor_dtype(c) && dtype_with(f, problem, c, name) == tensor_dtype(c));
  if (!follows) return to + " (" + name + " is always " + std::string(dtype_name(want)) + ")";
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : "|") + c;
  return to + ", or to another dtype " + f.name + " takes and give it as --dtype (" + list + "); " + g + " is not one";
}

}  // namespace

void retype_byte_inputs(const FamilyDesc& f, const Params& problem, TensorMap& given) {
  for (const TensorSpec& s : f.input_specs(problem)) {
    auto it = given.find(s.name);
    if (s.dtype != DType::u8 || it == given.end() || it->second.dtype() != DType::e4m3) continue;
    Tensor t(DType::u8, it->second.shape());
    std::memcpy(t.raw(), it->second.raw(), t.nbytes());
    it->second = std::move(t);
  }
}

void check_given_dtypes(const FamilyDesc& f, const Params& problem, const TensorMap& given) {
  for (const TensorSpec& s : f.input_specs(problem)) {
    auto it = given.find(s.name);
    if (it == given.end() || it->second.dtype() == s.dtype) continue;
    throw Error(f.name + ": input '" + s.name + "' has dtype " + std::string(dtype_name(it->second.dtype())) +
                ", expected " + std::string(dtype_name(s.dtype)) + ": " + advice(f, problem, s.name, s.dtype, it->second.dtype()));
  }
}

}  // namespace moe::tuner
