#include "tuner/search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/rng.hpp"
#include "moe/error.hpp"

namespace moe::tuner {

Strategy parse_strategy(std::string_view s) {
  if (s == "exhaustive") return Strategy::exhaustive;
  if (s == "random") return Strategy::random;
  if (s == "halving") return Strategy::halving;
  throw Error("unknown --strategy '" + std::string(s) + "': use exhaustive, random or halving");
}

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::exhaustive: return "exhaustive";
    case Strategy::random: return "random";
    default: return "halving";
  }
}

namespace {

class Search {
 public:
  Search(std::vector<Candidate>& c, const SearchOptions& o, Evaluator& e)
      : c_(c), opt_(o), ev_(e), t0_(std::chrono::steady_clock::now()) {}

  SearchResult run() {
    r_.total = static_cast<int>(c_.size());
    for (int i = 0; i < r_.total; ++i)
      if (c_[i].is_default && r_.default_index < 0) r_.default_index = i;
    const std::vector<int> order = make_order();
    if (opt_.strategy == Strategy::halving) halving(order);
    else one_pass(order);
    for (auto& c : c_) r_.evaluated += c.evaluated() ? 1 : 0;
    return r_;
  }

 private:
  std::vector<int> make_order() {
    std::vector<int> rest;
    for (int i = 0; i < static_cast<int>(c_.size()); ++i)
      if (i != r_.default_index) rest.push_back(i);
    if (opt_.strategy != Strategy::exhaustive) {
      Rng rng(opt_.seed ^ 0x5ea5c4u);
      for (int i = static_cast<int>(rest.size()) - 1; i > 0; --i) std::swap(rest[i], rest[rng.below(i + 1)]);
    }
    std::vector<int> order;
    if (r_.default_index >= 0) order.push_back(r_.default_index);
    order.insert(order.end(), rest.begin(), rest.end());
    if (opt_.budget_n > 0 && static_cast<int>(order.size()) > opt_.budget_n) {
      order.resize(opt_.budget_n);
      r_.budget_hit = true;
    }
    return order;
  }

  // Checked before each evaluation: the default and two more always run. A layer's point is
  // three candidates (the stages' defaults, the tuned stages with and without PDL): a budget
  // spent after two left its PDL comparison half done on an H200.
  static constexpr int kAlwaysRun = 3;
  bool must_stop(int evaluated_so_far) {
    if (ev_.interrupted()) {
      r_.interrupted = true;
      return true;
    }
    if (opt_.budget_s > 0 && evaluated_so_far >= kAlwaysRun &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count() > opt_.budget_s) {
      r_.budget_hit = true;
      return true;
    }
    return false;
  }

  bool timed(int i) const { return c_[i].ok() && c_[i].stats.n > 0; }

  // The timer the pool is ranked on: the one most of its timed candidates share; on a tie the
  // one of the earliest in the pool (the default comes first).
  std::string ranking_timer(const std::vector<int>& pool) const {
    std::string best;
    int best_n = 0;
    for (int i : pool) {
      if (!timed(i)) continue;
      int n = 0;
      for (int j : pool) n += timed(j) && c_[j].timer == c_[i].timer ? 1 : 0;
      if (n > best_n) {
        best = c_[i].timer;
        best_n = n;
      }
    }
    return best;
  }

  double incumbent(const std::vector<int>& pool) const {
    const std::string t = ranking_timer(pool);
    double best = 0;
    for (int i : pool)
      if (timed(i) && c_[i].timer == t && (best == 0 || c_[i].stats.median_us < best)) best = c_[i].stats.median_us;
    return best;
  }

  std::vector<int> ranked(const std::vector<int>& pool) const {
    const std::string t = ranking_timer(pool);
    std::vector<int> r;
    for (int i : pool)
      if (timed(i) && c_[i].timer == t) r.push_back(i);
    std::stable_sort(r.begin(), r.end(), [&](int a, int b) { return c_[a].stats.median_us < c_[b].stats.median_us; });
    return r;
  }

  void pick(const std::vector<int>& finalists, const std::vector<int>& everyone) {
    std::vector<int> f = ranked(finalists);
    r_.timer = f.empty() ? ranking_timer(everyone) : c_[f[0]].timer;
    r_.unranked = 0;
    for (int i : everyone) r_.unranked += timed(i) && c_[i].timer != r_.timer ? 1 : 0;
    if (!f.empty()) r_.winner = f[0];
    if (f.size() > 1) {
      r_.runner_up = f[1];
    } else {
      for (int i : ranked(everyone))
        if (i != r_.winner && c_[i].timer == r_.timer) {
          r_.runner_up = i;
          break;
        }
    }
  }

  void one_pass(const std::vector<int>& order) {
    std::vector<int> done;
    for (int i : order) {
      if (must_stop(static_cast<int>(done.size()))) break;
      ev_.evaluate(c_[i], 0, opt_.rule, incumbent(done));
      done.push_back(i);
    }
    r_.rounds = 1;
    pick(done, done);
  }

  void halving(const std::vector<int>& order) {
    StopRule quick = opt_.rule;
    quick.max_noise = INFINITY;
    std::vector<int> done;
    for (int i : order) {
      if (must_stop(static_cast<int>(done.size()))) break;
      ev_.evaluate(c_[i], 0, quick, incumbent(done));
      done.push_back(i);
    }
    r_.rounds = 1;
    std::vector<int> alive = ranked(done);
    for (int round = 1; round <= opt_.max_rounds && alive.size() >= 2 && !r_.interrupted && !r_.budget_hit; ++round) {
      const std::size_t keep = std::max<std::size_t>(2, (alive.size() + 2) / 3);
      std::vector<int> next(alive.begin(), alive.begin() + std::min(keep, alive.size()));
      const int d = r_.default_index;
      if (d >= 0 && c_[d].ok() && std::find(next.begin(), next.end(), d) == next.end()) next.push_back(d);
      const bool final = next.size() <= 3;
      StopRule rr = opt_.rule;
      rr.min_samples = static_cast<int>(std::min<double>(opt_.rule.min_samples * std::pow(3.0, round), opt_.rule.max_samples));
      if (!final) rr.max_noise = INFINITY;
      const double inc = incumbent(next);
      bool stopped = false;
      for (int i : next) {
        if (must_stop(static_cast<int>(done.size()))) {
          stopped = true;
          break;
        }
        ev_.evaluate(c_[i], round, rr, inc);
      }
      r_.rounds = round + 1;
      alive = ranked(next);
      if (stopped) break;
      if (final && alive.size() >= 2) {
        const Stats &a = c_[alive[0]].stats, &b = c_[alive[1]].stats;
        const bool separated = !within_noise(a, b, opt_.rule.max_noise);
        const bool converged = a.noise <= opt_.rule.max_noise && b.noise <= opt_.rule.max_noise;
        if (separated || converged) break;
      }
    }
    pick(alive.empty() ? done : alive, done);
  }

  std::vector<Candidate>& c_;
  const SearchOptions& opt_;
  Evaluator& ev_;
  std::chrono::steady_clock::time_point t0_;
  SearchResult r_;
};

}  // namespace

SearchResult search(std::vector<Candidate>& cands, const SearchOptions& opt, Evaluator& ev) {
  if (cands.empty()) throw Error("search: a point with no candidate config");
  return Search(cands, opt, ev).run();
}

}  // namespace moe::tuner
