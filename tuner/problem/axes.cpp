#include "tuner/problem/axes.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>

#include "moe/error.hpp"
#include "tuner/problem/problem.hpp"

namespace moe::tuner {

namespace {

const char* const kListHelp = "use a list like 1,16,256 or a range of powers of two like 1-4096";

std::int64_t parse_int(const std::string& flag, const std::string& whole, const std::string& s) {
  std::int64_t v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range)
    throw Error(flag + " '" + whole + "': " + s + " is too large (the limit is " + std::to_string(kMaxAxisInt) + ")");
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw Error(flag + " '" + whole + "': '" + s + "' is not an integer (" + kListHelp + ")");
  return v;
}

}  // namespace

std::vector<std::string> axis_values(const std::string& flag, const std::string& text, bool integer) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (true) {
    const std::size_t e = text.find(',', b);
    const std::string item = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (item.empty())
      throw Error(flag + " '" + text + "' has an empty item: separate values by single commas, e.g. 1,16,256");
    const std::size_t dash = integer ? item.find('-', 1) : std::string::npos;
    if (dash != std::string::npos) {
      const std::int64_t lo = parse_int(flag, text, item.substr(0, dash)), hi = parse_int(flag, text, item.substr(dash + 1));
      if (lo < 1) throw Error(flag + " '" + text + "': a range starts at 1 or more (" + item + ")");
      if (hi > kMaxAxisInt)
        throw Error(flag + " '" + text + "': range " + item + " ends above the limit " + std::to_string(kMaxAxisInt) + " (2^31)");
      if (hi < lo) throw Error(flag + " '" + text + "': range " + item + " is empty (write the smaller end first)");
      for (std::int64_t v = lo; v <= hi; v *= 2) out.push_back(std::to_string(v));
    } else {
      if (integer) parse_int(flag, text, item);
      out.push_back(item);
    }
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

namespace {

// The axes grouped as they move: each dimension lists the axes whose values advance together
// (one axis, or a --zip group at its first member's place), in axis order.
std::vector<std::vector<std::size_t>> axis_dims(const std::vector<Axis>& axes, const std::vector<std::vector<std::string>>& zip) {
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < axes.size(); ++i) at[axes[i].name] = i;
  std::vector<std::vector<std::size_t>> groups;
  std::map<std::size_t, std::size_t> group_of;
  for (auto& names : zip) {
    std::vector<std::size_t> g;
    for (auto& n : names) {
      auto it = at.find(n);
      if (it == at.end()) {
        // Names arrive with '-' made '_': say them as the user typed the flag, and say so when
        // the dashes of the flag itself came along (--zip=--experts,topk).
        std::string shown = n;
        const bool dashed = shown.rfind("__", 0) == 0;
        shown.erase(0, shown.find_first_not_of('_'));
        std::replace(shown.begin(), shown.end(), '_', '-');
        throw Error("--zip " + shown + ": " +
                    (dashed ? std::string("name the flags without their dashes, ")
                            : std::string("not a list given on this command (zip names problem flags given several values, ")) +
                    "e.g. --zip experts,topk" + (dashed ? "" : ")"));
      }
      if (group_of.count(it->second) || std::find(g.begin(), g.end(), it->second) != g.end())
        throw Error("--zip names " + n + " twice: name each list once, e.g. --zip experts,topk");
      g.push_back(it->second);
    }
    if (g.size() < 2) throw Error("--zip needs two or more names, e.g. --zip experts,topk");
    for (std::size_t k : g) {
      if (axes[k].values.size() != axes[g[0]].values.size())
        throw Error("--zip " + axes[g[0]].name + "," + axes[k].name + ": the lists differ in length (" +
                    std::to_string(axes[g[0]].values.size()) + " and " + std::to_string(axes[k].values.size()) +
                    "): zipped lists pair element by element");
      group_of[k] = groups.size();
    }
    groups.push_back(g);
  }
  std::vector<std::vector<std::size_t>> dims;
  std::set<std::size_t> placed;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (placed.count(i)) continue;
    auto g = group_of.find(i);
    dims.push_back(g == group_of.end() ? std::vector<std::size_t>{i} : groups[g->second]);
    for (std::size_t k : dims.back()) placed.insert(k);
  }
  return dims;
}

std::uint64_t dims_count(const std::vector<Axis>& axes, const std::vector<std::vector<std::size_t>>& dims) {
  std::uint64_t n = 1;
  for (auto& dim : dims) {
    const std::uint64_t len = axes[dim[0]].values.size();
    if (len == 0) return 0;
    n = n > UINT64_MAX / len ? UINT64_MAX : n * len;
  }
  return n;
}

}  // namespace

std::uint64_t count_combinations(const std::vector<Axis>& axes, const std::vector<std::vector<std::string>>& zip) {
  return dims_count(axes, axis_dims(axes, zip));
}

std::vector<AxisValues> expand_axes(const std::vector<Axis>& axes, const std::vector<std::vector<std::string>>& zip) {
  const std::vector<std::vector<std::size_t>> dims = axis_dims(axes, zip);
  if (const std::uint64_t n = dims_count(axes, dims); n > kMaxCombinations) {
    std::string factors;
    for (auto& dim : dims) {
      if (axes[dim[0]].values.size() < 2) continue;
      std::string names;
      for (std::size_t k : dim) names += (names.empty() ? "" : "+") + axes[k].name;
      factors += (factors.empty() ? "" : " x ") + names + " " + std::to_string(axes[dim[0]].values.size());
    }
    throw Error("the problem axes make " + (n == UINT64_MAX ? std::string("2^64 or more") : std::to_string(n)) +
                " combinations (" + factors + "), more than the limit of " + std::to_string(kMaxCombinations) +
                " for one command: give fewer values, or pair lists of the same length element by element with --zip "
                "(e.g. --zip experts,topk)");
  }
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < axes.size(); ++i) at[axes[i].name] = i;
  std::vector<AxisValues> out(1);
  for (auto& dim : dims) {
    std::vector<AxisValues> next;
    for (auto& partial : out)
      for (std::size_t v = 0; v < axes[dim[0]].values.size(); ++v) {
        AxisValues c = partial;
        for (std::size_t k : dim) c.push_back({axes[k].name, axes[k].values[v]});
        next.push_back(std::move(c));
      }
    out = std::move(next);
  }
  // Back in axis order, whatever the zip grouping did.
  for (auto& c : out)
    std::stable_sort(c.begin(), c.end(), [&](auto& x, auto& y) { return at[x.first] < at[y.first]; });
  return out;
}

std::string axes_text(const AxisValues& v) {
  std::string t;
  for (auto& [n, x] : v) t += (t.empty() ? "" : ",") + n + "=" + x;
  return t;
}

std::vector<std::int64_t> parse_token_list(const std::string& text) {
  if (text.empty() || text == "default") return default_token_grid();
  std::vector<std::int64_t> out;
  for (const std::string& s : axis_values("--tokens", text, true)) {
    const std::int64_t v = std::stoll(s);
    if (v < 1) throw Error("--tokens '" + text + "': '" + s + "' is not a positive integer (" + kListHelp + " or default)");
    if (v > kMaxAxisInt)
      throw Error("--tokens '" + text + "': " + s + " is above the limit of " + std::to_string(kMaxAxisInt) + " (2^31) tokens");
    out.push_back(v);
  }
  return out;
}

}  // namespace moe::tuner
