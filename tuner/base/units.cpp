#include "tuner/base/units.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "moe/error.hpp"

namespace moe::tuner {

static bool parse_number(const std::string& s, double& v) {
  // Plain decimals only: strtod alone would also take " 5", "0x10" (16) and "0x1p4".
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

double parse_duration(const std::string& text, const std::string& flag) {
  static const std::pair<const char*, double> units[] = {{"ms", 1e-3}, {"us", 1e-6}, {"s", 1}, {"m", 60}, {"min", 60}, {"h", 3600}};
  double v = 0;
  if (parse_number(text, v) && v >= 0) return v;
  for (auto& [u, scale] : units) {
    const std::string us = u;
    if (text.size() > us.size() && text.compare(text.size() - us.size(), us.size(), us) == 0 &&
        parse_number(text.substr(0, text.size() - us.size()), v) && v >= 0)
      return v * scale;
  }
  throw Error(flag + " '" + text + "' is not a duration: use e.g. 250ms, 90s, 10m, 1h");
}

double parse_fraction(const std::string& text, const std::string& flag) {
  double v = 0;
  if (!text.empty() && text.back() == '%' && parse_number(text.substr(0, text.size() - 1), v) && v >= 0) return v / 100;
  if (parse_number(text, v) && v >= 0) return v;
  throw Error(flag + " '" + text + "' is not a fraction: use e.g. 5% or 0.05");
}

Budget parse_budget(const std::string& text) {
  Budget b;
  b.text = text;
  if (text.empty()) return b;
  bool digits = true;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (digits) {
    // Read whole, not by atoi: past int's range it would wrap (or be undefined).
    constexpr int kMaxCandidates = 1'000'000;
    const std::string digits_only = text.substr(std::min(text.find_first_not_of('0'), text.size()));
    if (digits_only.size() > 7 || (digits_only.empty() ? 0 : std::stoi(digits_only)) > kMaxCandidates)
      throw Error("--budget '" + text + "': at most " + std::to_string(kMaxCandidates) +
                  " candidates per point; no space is that large (give a time, e.g. 10m, for an open-ended budget)");
    b.candidates = digits_only.empty() ? 0 : std::stoi(digits_only);
    if (b.candidates < 1) throw Error("--budget '" + text + "': a candidate count must be at least 1");
    return b;
  }
  try {
    b.seconds = parse_duration(text, "--budget");
  } catch (const Error&) {
    throw Error("--budget '" + text + "' is neither a time (10m, 90s) nor a number of candidates per point (40)");
  }
  if (b.seconds <= 0) throw Error("--budget '" + text + "' must be positive");
  return b;
}

Shard parse_shard(const std::string& text) {
  const std::string form = "--shard '" + text + "' is not i/n with 0 <= i < n (e.g. 0/4 .. 3/4; $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)";
  // Digits only, read whole: strtol would take " 1", "+1" and "-0", and a cast to int would
  // wrap 4294967297 to 1.
  const auto whole = [&](const std::string& s, long long& v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
    v = s.size() > 18 ? LLONG_MAX : std::stoll(s);  // past any limit either way
    return true;
  };
  const auto slash = text.find('/');
  long long index = 0, count = 0;
  if (slash == std::string::npos || !whole(text.substr(0, slash), index) || !whole(text.substr(slash + 1), count) ||
      count < 1 || index >= count)
    throw Error(form);
  // Every shard reckons the whole partition, at a cost per shard: far more shards than points
  // only makes empty ones.
  if (count > kMaxShards)
    throw Error("--shard '" + text + "': at most " + std::to_string(kMaxShards) +
                " shards; cut the sweep in fewer parts (a part beyond its points would run nothing)");
  return Shard{static_cast<int>(index), static_cast<int>(count)};
}

std::string human_duration(double s) {
  char buf[64];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace moe::tuner
