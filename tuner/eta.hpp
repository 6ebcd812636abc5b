#pragma once
// The time a sweep has left. A per-candidate average misleads: the small router points come
// first and the large gmm and layer points last, so it ran 3-5x short. Instead every point
// comes with an expected cost (from its bytes and FLOPs, or at least its candidate count),
// and the time its family's finished work actually took per unit of expected cost (else the
// whole sweep's) prices the work that is left. No clock is read here: times are given.
#include <string>
#include <vector>

namespace moe::tuner {

struct EtaPoint {
  std::string group;    // the points whose costs are priced alike: the family
  double expected = 0;  // any unit proportional to time; <= 0: unknown
  int candidates = 0;
};

class EtaEstimator {
 public:
  // `devices`: workers running points side by side.
  EtaEstimator(std::vector<EtaPoint> points, int devices);
  // At `t` seconds since the start, point `i` began (its first candidate).
  void point_started(int i, double t);
  // One more of point `i`'s candidates is done; `replayed`: taken from the journal of a
  // resumed sweep, so it cost no time and says nothing about the rate.
  void candidate_done(int i, bool replayed);
  // Point `i` ended at `t`; the candidates the search did not visit count as done.
  void point_finished(int i, double t);
  // Seconds left at `now`; -1 until some work has been measured.
  double remaining_s(double now) const;

 private:
  struct State {
    EtaPoint spec;
    double start = -1, end = -1;
    int done = 0, replayed = 0;
  };
  double weight(const State& p) const;
  std::vector<State> points_;
  int devices_;
  bool by_count_ = false;  // some point's cost is unknown: weigh every point by its candidates
};

}  // namespace moe::tuner
