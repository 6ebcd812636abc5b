#include "tuner/problem/problem.hpp"

#include <charconv>
#include <sstream>

#include "moe/error.hpp"

namespace moe::tuner {

Params problem_for(const FamilyDesc& f, const Params& model, const Params& overrides, bool strict) {
  Params p;
  for (auto& [k, v] : model.values())
    if (const ParamSpec* spec = f.problem_param(k)) {
      Value val = v;
      // A preset may say dtype bf16 for a family whose dtype is only its logits' (router: f32 default).
      try {
        check_value(*spec, val);
      } catch (const Error&) {
        continue;
      }
      p.set(k, val);
    }
  for (auto& [k, v] : overrides.values()) {
    if (!f.problem_param(k)) {
      if (strict) {
        std::string names;
        for (auto& s : f.problem_params) names += (names.empty() ? "" : ", ") + s.name;
        throw Error("family '" + f.name + "' has no problem parameter '" + k + "' (it has: " + names + ")");
      }
      continue;
    }
    p.set(k, v);
  }
  return complete(f.problem_params, p, "family '" + f.name + "'");
}

const std::vector<std::int64_t>& default_token_grid() {
  static const std::vector<std::int64_t> g = {1,   2,   4,   8,    16,   24,   32,   48,   64,   96,
                                              128, 256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384};
  return g;
}

static std::int64_t parse_count(const std::string& s, const std::string& whole) {
  std::int64_t v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 1)
    throw Error("--tokens '" + whole + "': '" + s + "' is not a positive integer (use e.g. 1,16,256 or 1-4096 or default)");
  return v;
}

std::vector<std::int64_t> parse_token_list(const std::string& text) {
  if (text.empty() || text == "default") return default_token_grid();
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto dash = item.find('-');
    if (dash != std::string::npos) {
      const std::int64_t lo = parse_count(item.substr(0, dash), text), hi = parse_count(item.substr(dash + 1), text);
      if (hi < lo) throw Error("--tokens '" + text + "': range " + item + " is empty");
      for (std::int64_t v = lo; v <= hi; v *= 2) out.push_back(v);
    } else {
      out.push_back(parse_count(item, text));
    }
  }
  if (out.empty()) throw Error("--tokens '" + text + "' names no token count");
  return out;
}

}  // namespace moe::tuner
