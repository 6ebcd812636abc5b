#pragma once
// The small value syntaxes of the tuner's flags, with errors that show the accepted forms.
#include <string>

namespace moe::tuner {

// "90s", "10m", "1h", "250ms", "20" (seconds) -> seconds.
double parse_duration(const std::string& text, const std::string& flag);
// "5%" or "0.05" -> 0.05.
double parse_fraction(const std::string& text, const std::string& flag);

// --budget: a duration for the whole sweep ("10m"), or a number of candidates per point ("40").
struct Budget {
  int candidates = 0;  // 0: no limit
  double seconds = 0;  // 0: no limit
  std::string text;
};
Budget parse_budget(const std::string& text);

// --shard "i/n" with 0 <= i < n <= kMaxShards.
constexpr int kMaxShards = 65536;
struct Shard {
  int index = 0, count = 1;
};
Shard parse_shard(const std::string& text);

// "90 s", "12.5 min", "1.2 h" for people.
std::string human_duration(double seconds);

// Now as "2026-11-22T03:45:00Z", the time stamp results, journals and tables carry.
std::string utc_now();

}  // namespace moe::tuner
