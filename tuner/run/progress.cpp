#include "tuner/run/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "moe/error.hpp"
#include "tuner/base/interrupt.hpp"
#include "tuner/base/units.hpp"

namespace moe::tuner {

ProgressMode parse_progress_mode(const std::string& s) {
  if (s == "tty") return ProgressMode::tty;
  if (s == "plain") return ProgressMode::plain;
  if (s == "json") return ProgressMode::json;
  if (s == "quiet") return ProgressMode::quiet;
  throw Error("unknown progress mode '" + s + "': use tty, plain, json or quiet");
}

ProgressMode default_progress_mode() { return ::isatty(2) ? ProgressMode::tty : ProgressMode::plain; }

namespace {

std::vector<EtaPoint> eta_points(const std::vector<ProgressPoint>& points) {
  std::vector<EtaPoint> v;
  for (auto& p : points) v.push_back(p.eta);
  return v;
}

}  // namespace

Progress::Progress(ProgressMode mode, int devices, std::vector<ProgressPoint> points, double plain_period_s,
                   std::FILE* out)
    : mode_(mode),
      out_(out),
      lines_(static_cast<std::size_t>(std::max(devices, 1))),
      current_(lines_.size(), -1),
      eta_(eta_points(points), devices),
      total_points_(static_cast<int>(points.size())),
      period_s_(plain_period_s),
      t0_(std::chrono::steady_clock::now()),
      last_draw_(t0_) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    slot_of_[points[i].id] = static_cast<int>(i);
    total_cands_ += points[i].eta.candidates;
  }
  event({{"event", "start"}, {"devices", devices}, {"candidates", total_cands_}, {"points", total_points_}});
}

Progress::~Progress() { finish(); }

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

int Progress::slot(int point) const {
  const auto it = slot_of_.find(point);
  return it == slot_of_.end() ? -1 : it->second;
}

std::string Progress::line_text(int dev, std::size_t width) const {
  const Line& l = lines_[dev];
  const double eta = eta_.remaining_s(elapsed_s());
  const std::string head = fmt::format("[dev {}] {}/{} candidates, {}/{} points", dev, done_cands_, total_cands_,
                                       done_points_, total_points_);
  std::string tail;
  if (l.best_us > 0) tail += fmt::format(" | best {:.3f} us", l.best_us);
  if (eta >= 0) tail += " | ETA " + human_duration(eta);
  std::string what = l.point.empty() ? "" : " | " + l.point + " " + l.config;
  // A long config (the layer's) gives way, not the best time and the ETA after it.
  if (width > 0 && head.size() + what.size() + tail.size() > width) {
    const std::size_t room = width > head.size() + tail.size() + 3 ? width - head.size() - tail.size() - 3 : 0;
    what = what.substr(0, room) + "...";
  }
  return head + what + tail;
}

void Progress::clear_live() {
  // The interrupt handler wrote its message under the live lines: erasing upwards would erase
  // it, so those lines stay above it and the next draw starts below.
  const int said = std::min(interrupts().load(), 2);  // it writes for the first two only
  if (said != interrupts_seen_) {
    interrupts_seen_ = said;
    drawn_ = 0;
  }
  for (int i = 0; i < drawn_; ++i) std::fputs("\x1b[1A\x1b[2K", out_);
  drawn_ = 0;
}

void Progress::redraw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (mode_ == ProgressMode::tty) {
    if (!force && since < 0.1) return;
    clear_live();
    for (std::size_t d = 0; d < lines_.size(); ++d) {
      std::fprintf(out_, "%s\n", line_text(static_cast<int>(d), 160).c_str());
    }
    drawn_ = static_cast<int>(lines_.size());
    std::fflush(out_);
  } else if (mode_ == ProgressMode::plain) {
    if (!force && since < period_s_) return;
    for (std::size_t d = 0; d < lines_.size(); ++d) std::fprintf(out_, "%s\n", line_text(static_cast<int>(d)).c_str());
    std::fflush(out_);
  }
  last_draw_ = now;
}

void Progress::candidate_started(int dev, int point, const std::string& label, const std::string& config) {
  std::lock_guard lock(mu_);
  Line& l = lines_.at(dev);
  if (l.point != label) l.best_us = 0;
  l.point = label;
  l.config = config;
  current_.at(dev) = slot(point);
  if (current_[dev] >= 0) eta_.point_started(current_[dev], elapsed_s());
  event({{"event", "candidate"}, {"device", dev}, {"point", label}, {"config", config}});
  redraw(false);
}

void Progress::candidate_finished(int dev, const std::string& status, double median_us, bool counted, bool replayed) {
  std::lock_guard lock(mu_);
  Line& l = lines_.at(dev);
  if (counted) {
    ++done_cands_;
    if (current_.at(dev) >= 0) eta_.candidate_done(current_[dev], replayed, elapsed_s());
  }
  if (status == "ok" && median_us > 0 && (l.best_us == 0 || median_us < l.best_us)) l.best_us = median_us;
  event({{"event", "result"}, {"device", dev}, {"point", l.point}, {"config", l.config}, {"status", status},
         {"median_us", median_us}, {"done", done_cands_}, {"total", total_cands_}});
  redraw(false);
}

void Progress::point_finished(int dev, int point, const std::string& label, const std::string& best, double best_us,
                              int timed, int total, int unvisited) {
  std::lock_guard lock(mu_);
  done_cands_ += unvisited;
  ++done_points_;
  if (const int i = slot(point); i >= 0) eta_.point_finished(i, elapsed_s());
  event({{"event", "point"}, {"device", dev}, {"point", label}, {"best", best}, {"best_us", best_us}, {"timed", timed},
         {"total", total}, {"points_done", done_points_}, {"points", total_points_}});
  if (mode_ == ProgressMode::plain) {
    std::fprintf(out_, "done %s: best %s %.3f us (%d/%d timed) [%d/%d points]\n", label.c_str(), best.c_str(), best_us,
                 timed, total, done_points_, total_points_);
    std::fflush(out_);
  }
  redraw(mode_ == ProgressMode::tty);
}

void Progress::warning(const std::string& text) {
  if (mode_ != ProgressMode::quiet) return message(text);
  std::lock_guard lock(mu_);
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Progress::message(const std::string& text) {
  std::lock_guard lock(mu_);
  if (mode_ == ProgressMode::quiet) return;
  if (mode_ == ProgressMode::json) {
    event({{"event", "message"}, {"text", text}});
    return;
  }
  if (mode_ == ProgressMode::tty) clear_live();
  std::fprintf(out_, "%s\n", text.c_str());
  if (mode_ == ProgressMode::tty) redraw(true);
  std::fflush(out_);
}

void Progress::event(const json& e) {
  if (mode_ != ProgressMode::json) return;
  json ev = e;
  ev["t_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::fprintf(stdout, "%s\n", ev.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (mode_ == ProgressMode::tty && drawn_ > 0) {
    redraw(true);
    drawn_ = 0;  // leave the final lines on screen
  }
}

}  // namespace moe::tuner
