#pragma once
// Sweep progress. On a terminal: a live line per device (done/total, current candidate, best
// so far, ETA). Elsewhere: plain lines at most every few seconds plus one per finished point.
// --json: one JSON event per line on stdout for machines. --quiet: nothing.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "tuner/json_io.hpp"

namespace moe::tuner {

enum class ProgressMode { tty, plain, json, quiet };
ProgressMode parse_progress_mode(const std::string& s);
ProgressMode default_progress_mode();  // tty when stderr is a terminal, else plain

class Progress {
 public:
  Progress(ProgressMode mode, int devices, int total_candidates, int total_points, double plain_period_s = 10);
  ~Progress();
  void candidate_started(int dev, const std::string& point, const std::string& config);
  // `counted`: the first evaluation of this candidate (later halving rounds do not count).
  void candidate_finished(int dev, const std::string& status, double median_us, bool counted);
  // `timed`: candidates that ran correctly and were timed; `unvisited`: those the search
  // skipped (they count as done).
  void point_finished(int dev, const std::string& point, const std::string& best, double best_us, int timed,
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
  double eta_s() const;
  std::string line_text(int dev) const;
  void redraw(bool force);
  void clear_live();
  ProgressMode mode_;
  std::vector<Line> lines_;
  int total_cands_, total_points_, done_cands_ = 0, done_points_ = 0;
  double period_s_;
  std::chrono::steady_clock::time_point t0_, last_draw_;
  int drawn_ = 0;
  std::mutex mu_;
};

}  // namespace moe::tuner
