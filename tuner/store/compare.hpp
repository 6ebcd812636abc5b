#pragma once
// Regression check between two results files: records are matched on (kernel, problem,
// tokens, config); each matched pair gets a verdict from the medians and the interquartile
// ranges, and the whole a geometric-mean ratio.
//   SAME   the medians differ by no more than the threshold
//   NOISY  they differ by more, but the interquartile ranges overlap: not a trustworthy change
//   SLOW / FAST  they differ by more and the ranges are apart
// A record that was ok in BASE and is not in NEW is BROKEN. When the records carry the values
// of a sweep's problem axes (their problem keys hold them, so matched records share them), the
// report adds the geometric mean and verdicts per axis value. Points that both files measured
// beside a peer add a small table of the two ratios of the peer's time to ours.
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

enum class Verdict { same, noisy, slow, fast, broken };
std::string_view verdict_name(Verdict v);  // "SAME", "NOISY", "SLOW", "FAST", "BROKEN"

Verdict verdict(const Stats& base, const Stats& now, double threshold);

struct CompareRow {
  std::string kernel, problem_key, config_key;
  long long tokens = 0;
  Stats base, now;
  double ratio = 1;  // now / base median
  Verdict v = Verdict::same;
  std::string status_now;  // for BROKEN
  std::vector<std::pair<std::string, std::string>> axes;  // the base record's axis values, if it has any
};

// A point both files put beside a peer (their points' side_by_side): the ratio in each.
struct PeerRow {
  std::string kernel, problem_key, base_peer, now_peer;
  long long tokens = 0;
  double base_ratio = 0, now_ratio = 0;  // peer us / ours us: above 1 ours is faster
};

struct CompareReport {
  std::vector<CompareRow> rows;
  std::vector<PeerRow> peers;
  int only_base = 0, only_new = 0;
  double geomean = 1;  // of the ratios of matched ok pairs
  // "timer: steady_clock vs cupti": measurement settings that differ between the two files, so
  // a change they explain is not read as the code's.
  std::vector<std::string> setting_differences;
  int count(Verdict v) const;
};

CompareReport compare_results(const json& base, const json& now, double threshold);
std::string compare_markdown(const CompareReport& r, double threshold);

}  // namespace moe::tuner
