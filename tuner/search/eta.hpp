#pragma once
// The time a sweep has left. A per-candidate average misleads: the small router points come
// first and the large gmm and layer points last, so it ran 3-5x short. Instead every point
// comes with its expected cost in nominal seconds (the plan's estimate from its bytes, FLOPs
// and candidates), and what the finished work actually took corrects it: per family, the
// seconds per candidate the nominal rates do not see (worker round trips, validation,
// sampling until the noise settles), and a scale where the work ran faster than nominal.
// No clock is read here: times are given.
#include <string>
#include <vector>

namespace moe::tuner {

struct EtaPoint {
  std::string group;    // the points whose costs are priced alike: the family
  double expected = 0;  // nominal seconds; <= 0: unknown (then every point is priced by candidates alone)
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
  void candidate_done(int i, bool replayed, double t = -1);
  // Point `i` ended at `t`; the candidates the search did not visit count as done.
  void point_finished(int i, double t);
  // Seconds left at `now`; -1 until some work has been measured.
  double remaining_s(double now) const;

 private:
  struct State {
    EtaPoint spec;
    double start = -1, end = -1;
    double last = -1;  // when its latest candidate finished
    int done = 0, replayed = 0;
  };
  double nominal(const State& p) const;
  std::vector<State> points_;
  int devices_;
  bool by_count_ = false;  // some point's cost is unknown: no point's nominal cost is used
};

}  // namespace moe::tuner
