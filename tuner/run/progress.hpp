#pragma once
// Sweep progress. On a terminal: a live line per device (done/total, current candidate, best
// so far, ETA). Elsewhere: plain lines at most every few seconds plus one per finished point.
// --json: one JSON event per line on stdout for machines. --quiet: nothing.
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tuner/search/eta.hpp"
#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

enum class ProgressMode { tty, plain, json, quiet };
ProgressMode parse_progress_mode(const std::string& s);
ProgressMode default_progress_mode();  // tty when stderr is a terminal, else plain

// A point of the sweep as progress sees it: `id` names it in the calls below (the plan index).
struct ProgressPoint {
  int id = 0;
  EtaPoint eta;
};

class Progress {
 public:
  // Lines go to `out` (stderr; tests give a file), JSON events to stdout.
  Progress(ProgressMode mode, int devices, std::vector<ProgressPoint> points, double plain_period_s = 10,
           std::FILE* out = stderr);
  ~Progress();
  void candidate_started(int dev, int point, const std::string& label, const std::string& config);
  // `counted`: the first evaluation of this candidate (later halving rounds do not count).
  // `replayed`: taken from the journal of a resumed sweep, not measured now.
  void candidate_finished(int dev, const std::string& status, double median_us, bool counted, bool replayed = false);
  // `timed`: candidates that ran correctly and were timed; `unvisited`: those the search
  // skipped (they count as done).
  void point_finished(int dev, int point, const std::string& label, const std::string& best, double best_us, int timed,
                      int total, int unvisited);
  void message(const std::string& text);  // a line above the live lines
  void warning(const std::string& text);  // the same, but shown when quiet too: it may change what the results mean
  void event(const json& e);              // json mode only
  void finish();
  ProgressMode mode() const { return mode_; }

 private:
  struct Line {
    std::string point, config, best;
    double best_us = 0;
  };
  double elapsed_s() const;
  std::string line_text(int dev, std::size_t width = 0) const;  // width 0: whole
  void redraw(bool force);
  void clear_live();
  int slot(int point) const;
  ProgressMode mode_;
  std::FILE* out_;
  std::vector<Line> lines_;
  std::vector<int> current_;  // per device: the slot of its point, -1 before the first
  std::map<int, int> slot_of_;  // point id -> its index in eta_
  EtaEstimator eta_;
  int total_cands_ = 0, total_points_ = 0, done_cands_ = 0, done_points_ = 0;
  double period_s_;
  std::chrono::steady_clock::time_point t0_, last_draw_;
  int drawn_ = 0;
  int interrupts_seen_ = 0;  // interrupt messages the signal handler wrote under the live lines
  std::mutex mu_;
};

}  // namespace moe::tuner
