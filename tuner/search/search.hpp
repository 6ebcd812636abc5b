#pragma once
// Which candidates of a point get measured, and how much: exhaustive, random under a budget,
// and successive halving (the default). The search only decides; an Evaluator measures
// (through a worker, or from the journal when resuming), so the same decisions replay.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "moe/params.hpp"
#include "tuner/measure/stats.hpp"
#include "tuner/measure/stopping.hpp"

namespace moe::tuner {

enum class Strategy { exhaustive, random, halving };
Strategy parse_strategy(std::string_view s);  // Error listing the strategies
std::string_view strategy_name(Strategy s);

struct Candidate {
  Params config;
  std::string key;  // config.str()
  bool is_default = false;
  std::string invalid_reason;  // set for configs of a --space file the family rejects: never run

  // Filled by the evaluator.
  std::string status;  // "" until evaluated, then ok | invalid | failed | crashed | timeout
  bool validated = false;
  std::vector<double> samples_us;
  std::string timer;  // what took every one of samples_us ("" when untagged: a test's evaluator)
  Stats stats;
  int rounds = 0;
  bool early_stop = false;
  std::string error;
  double call_s = 0;  // one call's time when it was validated: sizes the measurement's watchdog
  bool evaluated() const { return !status.empty(); }
  bool ok() const { return status == "ok"; }
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Validates `c` on its first evaluation (an invalid one is never timed), then measures it
  // with `rule`, appending samples and updating status and stats. `round` is the search
  // round (0 for exhaustive and random).
  virtual void evaluate(Candidate& c, int round, const StopRule& rule, double incumbent_us) = 0;
  // True once the sweep was interrupted: the search stops before the next evaluation.
  virtual bool interrupted() const = 0;
};

struct SearchOptions {
  Strategy strategy = Strategy::halving;
  StopRule rule;
  int budget_n = 0;       // at most this many candidates per point (0: all)
  double budget_s = 0;    // stop starting candidates after this long (0: no limit)
  std::uint64_t seed = 0;  // order of random and halving
  int max_rounds = 6;     // halving rounds after the first
};

struct SearchResult {
  int total = 0, evaluated = 0;
  int winner = -1, runner_up = -1, default_index = -1;  // indices into the candidates; -1: none
  int rounds = 0;
  bool interrupted = false, budget_hit = false;
  // Candidates are ranked only against like-timed ones: `timer` is the timer of those ranked
  // (the one most timed candidates share, the earliest evaluated on a tie); `unranked` counts
  // timed candidates left out because another timer took their samples.
  std::string timer;
  int unranked = 0;
};

// Candidates must be non-empty; the default (is_default) is evaluated first and, under
// halving, kept to the final round so the speed-up and the kept-default rule have a fair
// figure for it.
SearchResult search(std::vector<Candidate>& cands, const SearchOptions& opt, Evaluator& ev);

}  // namespace moe::tuner
