#pragma once
// Problem axes: a problem parameter (or --model, --tp, --ep) given as a list of values. A sweep
// runs their cross product, or pairs named axes element-wise (--zip), one unit per combination.
//
// One syntax for every integer axis, --tokens included: "64,128,256" is a list, "1-64" the
// powers of two from 1 to 64 (each value doubled until above the upper end), and the two mix:
// "1-8,24,32". A leading '-' is a negative number, not a range.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moe::tuner {

// The largest token count (and upper end of any integer range): a sweep of more than 2^31
// tokens cannot be sized, and a larger range end would double past the integer's end.
constexpr std::int64_t kMaxAxisInt = std::int64_t{1} << 31;

struct Axis {
  std::string name;                 // a problem parameter, or model, tp, ep
  std::vector<std::string> values;  // as typed, ranges expanded
};

// One combination: (axis name, value) for every axis, in axis order.
using AxisValues = std::vector<std::pair<std::string, std::string>>;

// Splits `text` (what `flag` was given) into values. integer: each item is an integer or an
// "A-B" range of non-negative integers (A <= B <= 2^31). An empty item ("1,,16") is an Error.
std::vector<std::string> axis_values(const std::string& flag, const std::string& text, bool integer);

// The most combinations one command's axes may make (docs/commands/sweep.md#axes). Each
// combination is a problem with its own points, plan line and journal entries: far more is a
// typo or a list meant for --zip, and expanding it first would exhaust memory before saying so.
constexpr std::uint64_t kMaxCombinations = 4096;

// How many combinations `axes` make with `zip`, counted without expanding them (saturating at
// UINT64_MAX); an Error for a --zip that names no list or pairs lists of different lengths.
std::uint64_t count_combinations(const std::vector<Axis>& axes, const std::vector<std::vector<std::string>>& zip);

// The cross product of `axes`, the last axis varying fastest. Each group in `zip` names axes
// whose lists are paired element-wise (same length, else an Error) and then cross the rest.
// More than kMaxCombinations is an Error naming the count, checked before anything expands.
std::vector<AxisValues> expand_axes(const std::vector<Axis>& axes, const std::vector<std::vector<std::string>>& zip);

// "experts=64,topk=4".
std::string axes_text(const AxisValues& v);

// Token counts: an axis of positive integers up to 2^31, or "default" (the default grid).
std::vector<std::int64_t> parse_token_list(const std::string& text);

}  // namespace moe::tuner
