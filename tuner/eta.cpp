#include "tuner/eta.hpp"

#include <algorithm>
#include <map>

namespace moe::tuner {

EtaEstimator::EtaEstimator(std::vector<EtaPoint> points, int devices) : devices_(std::max(devices, 1)) {
  for (auto& p : points) {
    by_count_ = by_count_ || (p.expected <= 0 && p.candidates > 0);
    points_.push_back(State{std::move(p)});
  }
}

double EtaEstimator::weight(const State& p) const { return by_count_ ? p.spec.candidates : p.spec.expected; }

void EtaEstimator::point_started(int i, double t) {
  State& p = points_.at(static_cast<std::size_t>(i));
  if (p.start < 0) p.start = t;
}

void EtaEstimator::candidate_done(int i, bool replayed) {
  State& p = points_.at(static_cast<std::size_t>(i));
  if (p.done >= p.spec.candidates) return;
  ++p.done;
  if (replayed) ++p.replayed;
}

void EtaEstimator::point_finished(int i, double t) {
  State& p = points_.at(static_cast<std::size_t>(i));
  if (p.start < 0) p.start = t;
  p.end = t;
  p.done = p.spec.candidates;
}

double EtaEstimator::remaining_s(double now) const {
  // Seconds spent per unit of expected cost, over the work measured so far: per group, and overall.
  struct Rate {
    double spent = 0, credit = 0;
  };
  std::map<std::string, Rate> rates;
  Rate all;
  for (const State& p : points_) {
    if (p.start < 0 || p.spec.candidates <= 0) continue;
    const int measured = p.done - p.replayed;
    if (measured <= 0) continue;
    const double spent = (p.end >= 0 ? p.end : now) - p.start;
    const double credit = weight(p) * measured / p.spec.candidates;
    Rate& r = rates[p.spec.group];
    r.spent += spent;
    r.credit += credit;
    all.spent += spent;
    all.credit += credit;
  }
  if (all.credit <= 0) return -1;
  double left = 0;
  for (const State& p : points_) {
    if (p.end >= 0 || p.spec.candidates <= 0) continue;
    const auto it = rates.find(p.spec.group);
    const Rate& r = it != rates.end() && it->second.credit > 0 ? it->second : all;
    left += weight(p) * (p.spec.candidates - p.done) / p.spec.candidates * (r.spent / r.credit);
  }
  return left / devices_;
}

}  // namespace moe::tuner
