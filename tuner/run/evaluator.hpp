#pragma once
// The search's Evaluator in a sweep: a candidate's measurement comes from the journal when a
// previous run made it (resume), else from the device's worker process (prepare once per
// point, validate on first use, measure), and is journaled before the search sees it.
// Crashes, hangs and sticky errors become the candidate's status; the sweep goes on.
#include <string>

#include "tuner/search/search.hpp"
#include "tuner/run/sweep_state.hpp"
#include "tuner/run/worker_process.hpp"

namespace moe::tuner {

struct Interrupted {};  // a candidate was abandoned on a second interrupt
struct PointFailed {    // the point cannot be prepared: it is recorded with this error
  std::string why;
};

class WorkerEvaluator : public Evaluator {
 public:
  WorkerEvaluator(SweepState& s, WorkerProcess& w, int slot, int ordinal, const PlanPoint& pt);
  void evaluate(Candidate& c, int round, const StopRule& rule, double incumbent_us) override;
  bool interrupted() const override;

 private:
  int cand_index(const Candidate& c) const { return static_cast<int>(&c - pt_.candidates.data()); }
  json base_line(const Candidate& c, int round) const;
  const Params& run_config(const Candidate& c) const;  // what the worker runs: resolved when the unit resolves
  static void apply(Candidate& c, const json& l);
  void ensure_prepared();
  bool lost(const Reply& r, json& line, const char* phase);
  json run(Candidate& c, int round, const StopRule& rule, double incumbent_us);

  SweepState& s_;
  WorkerProcess& w_;
  int slot_, ordinal_;
  const PlanPoint& pt_;
  std::string pkey_;
  bool prepared_ = false;
  int prepared_pid_ = -1;
  double prepare_s_ = 0;
};

}  // namespace moe::tuner
