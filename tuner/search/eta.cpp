#include "tuner/search/eta.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace moe::tuner {

EtaEstimator::EtaEstimator(std::vector<EtaPoint> points, int devices) : devices_(std::max(devices, 1)) {
  for (auto& p : points) {
    by_count_ = by_count_ || (p.expected <= 0 && p.candidates > 0);
    points_.push_back(State{std::move(p)});
  }
}

double EtaEstimator::nominal(const State& p) const { return by_count_ ? 0.0 : p.spec.expected; }

void EtaEstimator::point_started(int i, double t) {
  State& p = points_.at(static_cast<std::size_t>(i));
  if (p.start < 0) p.start = t;
}

void EtaEstimator::candidate_done(int i, bool replayed, double t) {
  State& p = points_.at(static_cast<std::size_t>(i));
  if (p.done >= p.spec.candidates) return;
  if (t >= 0) p.last = t;
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
  // A candidate costs its share of the point's nominal work plus an overhead the nominal rates
  // do not see (worker round trips, validation, sampling until the noise settles): measured per
  // family, as seconds per candidate beyond the nominal work. Before a family has measured work,
  // the whole sweep's overhead stands in; its work is taken at the nominal rates, which are
  // only scaled down where the family ran faster than they say.
  struct Fit {
    double spent = 0, credit = 0;  // seconds spent; nominal seconds of the work done
    double excess = 0;             // seconds spent beyond the scaled nominal work
    int measured = 0;              // candidates measured
    double scale() const { return credit > 0 ? std::min(1.0, spent / credit) : 1.0; }
    double overhead() const { return measured > 0 ? excess / measured : 0; }
  };
  struct Done {
    const State* p;
    double spent, credit;
    int measured;
  };
  std::vector<Done> done;
  std::map<std::string, Fit> fits;
  Fit all;
  for (const State& p : points_) {
    if (p.start < 0 || p.spec.candidates <= 0) continue;
    const int measured = p.done - p.replayed;
    if (measured <= 0) continue;
    // A point under way is charged up to its latest finished candidate: the time of the one
    // still running belongs to no finished work, and counting it made the estimate swing.
    const double spent = (p.end >= 0 ? p.end : p.last >= 0 ? p.last : now) - p.start;
    const double credit = nominal(p) * measured / p.spec.candidates;
    done.push_back({&p, spent, credit, measured});
    for (Fit* f : {&fits[p.spec.group], &all}) {
      f->spent += spent;
      f->credit += credit;
      f->measured += measured;
    }
  }
  if (all.measured <= 0) return -1;
  for (const Done& d : done) {
    Fit& f = fits[d.p->spec.group];
    f.excess += std::max(0.0, d.spent - f.scale() * d.credit);
    all.excess += std::max(0.0, d.spent - all.scale() * d.credit);
  }
  double left = 0;
  for (const State& p : points_) {
    if (p.end >= 0 || p.spec.candidates <= 0) continue;
    const auto it = fits.find(p.spec.group);
    const bool known = it != fits.end() && it->second.measured > 0;
    const double overhead = known ? it->second.overhead() : all.overhead();
    const double scale = known ? it->second.scale() : 1.0;
    const int n_left = p.spec.candidates - p.done;
    left += n_left * overhead + scale * nominal(p) * n_left / p.spec.candidates;
  }
  return left / devices_;
}

}  // namespace moe::tuner
