#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/rng.hpp"
#include "moe/error.hpp"
#include "tuner/search/search.hpp"

using namespace moe::tuner;

namespace {

// Candidates with known true times; samples are the true time with multiplicative noise.
struct Synthetic : Evaluator {
  std::map<std::string, double> truth;
  std::map<std::string, std::string> status;  // forced non-ok statuses
  std::map<std::string, std::string> timer;   // the timer of a candidate's samples ("" by default)
  double noise = 0.02;
  moe::Rng rng{42};
  int calls = 0, interrupt_after = -1;
  std::vector<std::string> order;

  void evaluate(Candidate& c, int, const StopRule& rule, double incumbent_us) override {
    ++calls;
    order.push_back(c.key);
    ++c.rounds;
    if (status.count(c.key)) {
      c.status = status[c.key];
      return;
    }
    c.validated = true;
    const double t = truth.at(c.key);
    SampleRun r = sample_until([&] { return t * (1 + noise * rng.normal()); }, rule, incumbent_us, c.samples_us);
    c.samples_us.insert(c.samples_us.end(), r.samples_us.begin(), r.samples_us.end());
    c.stats = summarize(c.samples_us);
    c.early_stop = c.early_stop || r.reason == StopReason::early_stop;
    c.status = "ok";
    if (timer.count(c.key)) c.timer = timer[c.key];
  }
  bool interrupted() const override { return interrupt_after >= 0 && calls >= interrupt_after; }
};

std::vector<Candidate> make(Synthetic& s, const std::vector<double>& times, int default_index) {
  std::vector<Candidate> c;
  for (std::size_t i = 0; i < times.size(); ++i) {
    Candidate x;
    x.key = "c" + std::to_string(i);
    x.config.set("tile", static_cast<std::int64_t>(i));
    x.is_default = static_cast<int>(i) == default_index;
    s.truth[x.key] = times[i];
    c.push_back(x);
  }
  return c;
}

StopRule fast_rule() {
  StopRule r;
  r.min_samples = 10;
  r.min_time_s = 0;
  r.max_noise = 0.01;
  r.max_time_s = 0.5;
  return r;
}

}  // namespace

TEST(TunerSearch, HalvingPicksTrueBestAndReportsCounts) {
  Synthetic s;
  std::vector<double> times;
  for (int i = 0; i < 30; ++i) times.push_back(100 + 7 * ((i * 11) % 30));  // a permutation of 100..303
  times[17] = 90;  // the best, not first, not the default
  times[4] = 93;   // a close runner-up (3% behind)
  auto c = make(s, times, 0);
  SearchOptions o;
  o.strategy = Strategy::halving;
  o.rule = fast_rule();
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.winner, 17);
  EXPECT_EQ(r.runner_up, 4);
  EXPECT_EQ(r.total, 30);
  EXPECT_EQ(r.evaluated, 30);
  EXPECT_EQ(r.default_index, 0);
  EXPECT_GE(r.rounds, 2);
  EXPECT_EQ(s.order.front(), "c0");  // the default goes first
  // Later rounds measure only the best third (and the default): far fewer than 30 per round.
  EXPECT_LT(s.calls, 30 + 10 + 3 * 6);
  // The winner got more samples than a candidate eliminated in round 0.
  EXPECT_GT(c[17].stats.n, c[29].stats.n);
}

TEST(TunerSearch, HalvingSeparatesCloseCandidatesWithMoreSamples) {
  Synthetic s;
  s.noise = 0.03;
  auto c = make(s, {100, 97, 96, 140, 150, 160}, 0);  // 96 vs 97: 1% apart under 3% noise
  SearchOptions o;
  o.rule = fast_rule();
  o.rule.max_noise = 0.002;
  o.rule.max_time_s = 0.2;
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.winner, 2);
  EXPECT_EQ(r.runner_up, 1);
  EXPECT_GT(c[2].stats.n, 100);
}

TEST(TunerSearch, HalvingKeepsTheDefaultToTheEnd) {
  Synthetic s;
  std::vector<double> times(12, 200);
  times[3] = 100;
  times[7] = 110;
  times[0] = 180;  // the default: worse than the finalists, better than the rest
  auto c = make(s, times, 0);
  SearchOptions o;
  o.rule = fast_rule();
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.winner, 3);
  EXPECT_EQ(c[0].rounds, c[3].rounds);
}

TEST(TunerSearch, EarlyStopsTwiceAsSlowCandidate) {
  Synthetic s;
  s.noise = 0.001;
  auto c = make(s, {100, 250, 105}, 0);
  SearchOptions o;
  o.strategy = Strategy::exhaustive;
  o.rule = fast_rule();
  o.rule.max_noise = 1e-9;  // would otherwise sample until the time-out
  o.rule.max_time_s = 0.05;
  search(c, o, s);
  EXPECT_TRUE(c[1].early_stop);
  EXPECT_EQ(c[1].stats.n, o.rule.min_samples);
  EXPECT_FALSE(c[2].early_stop);
  EXPECT_GT(c[2].stats.n, o.rule.min_samples);
}

TEST(TunerSearch, ExhaustiveEvaluatesEveryCandidateInOrder) {
  Synthetic s;
  auto c = make(s, {100, 80, 120, 90}, 2);
  SearchOptions o;
  o.strategy = Strategy::exhaustive;
  o.rule = fast_rule();
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.evaluated, 4);
  EXPECT_EQ(r.winner, 1);
  EXPECT_EQ(r.runner_up, 3);
  EXPECT_EQ(s.order, (std::vector<std::string>{"c2", "c0", "c1", "c3"}));
}

TEST(TunerSearch, RandomUnderCandidateBudget) {
  Synthetic s;
  std::vector<double> times;
  for (int i = 0; i < 20; ++i) times.push_back(100 + i);
  auto c = make(s, times, 5);
  SearchOptions o;
  o.strategy = Strategy::random;
  o.rule = fast_rule();
  o.budget_n = 6;
  o.seed = 9;
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.evaluated, 6);
  EXPECT_EQ(r.total, 20);
  EXPECT_TRUE(r.budget_hit);
  EXPECT_EQ(s.order.front(), "c5");
  // Same seed, same draw.
  Synthetic s2;
  auto c2 = make(s2, times, 5);
  search(c2, o, s2);
  EXPECT_EQ(s.order, s2.order);
}

TEST(TunerSearch, TimeBudgetStopsStartingCandidates) {
  Synthetic s;
  std::vector<double> times(50, 100);
  auto c = make(s, times, 0);
  SearchOptions o;
  o.strategy = Strategy::exhaustive;
  o.rule = fast_rule();
  o.rule.max_noise = 1e-9;
  o.rule.max_time_s = 0.02;  // each candidate ~20 ms
  o.budget_s = 0.1;
  const SearchResult r = search(c, o, s);
  EXPECT_TRUE(r.budget_hit);
  EXPECT_GE(r.evaluated, 2);
  EXPECT_LT(r.evaluated, 20);
}

TEST(TunerSearch, ASpentTimeBudgetStillRunsTheDefaultAndTwoMore) {
  // A layer point's three candidates (stage defaults, tuned with and without PDL) all run even
  // when the sweep's time is gone; a larger space stops right after the third.
  for (int n : {3, 12}) {
    for (Strategy st : {Strategy::exhaustive, Strategy::halving}) {
      Synthetic s;
      std::vector<double> times(static_cast<std::size_t>(n), 100);
      auto c = make(s, times, 0);
      SearchOptions o;
      o.strategy = st;
      o.rule = fast_rule();
      o.budget_s = 1e-9;
      const SearchResult r = search(c, o, s);
      EXPECT_EQ(r.evaluated, 3) << n;
      if (n > 3) EXPECT_TRUE(r.budget_hit) << n;
    }
  }
}

TEST(TunerSearch, FailedCandidatesAreNeverChosen) {
  Synthetic s;
  auto c = make(s, {100, 50, 60, 70, 80}, 0);
  s.status["c1"] = "invalid";
  s.status["c2"] = "crashed";
  for (Strategy st : {Strategy::exhaustive, Strategy::halving}) {
    for (auto& x : c) {  // forget the previous strategy's measurements
      Candidate fresh;
      fresh.config = x.config;
      fresh.key = x.key;
      fresh.is_default = x.is_default;
      x = fresh;
    }
    SearchOptions o;
    o.strategy = st;
    o.rule = fast_rule();
    const SearchResult r = search(c, o, s);
    EXPECT_EQ(r.winner, 3) << strategy_name(st);
    EXPECT_EQ(r.evaluated, 5);
  }
}

TEST(TunerSearch, StopsWhenInterrupted) {
  Synthetic s;
  auto c = make(s, {100, 90, 80, 70, 60}, 0);
  s.interrupt_after = 2;
  SearchOptions o;
  o.rule = fast_rule();
  const SearchResult r = search(c, o, s);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.evaluated, 2);
}

TEST(TunerSearch, ParsesStrategies) {
  EXPECT_EQ(parse_strategy("halving"), Strategy::halving);
  EXPECT_EQ(parse_strategy("random"), Strategy::random);
  EXPECT_EQ(parse_strategy("exhaustive"), Strategy::exhaustive);
  EXPECT_THROW(parse_strategy("greedy"), moe::Error);
}

TEST(TunerSearch, RanksOnlyLikeTimedCandidatesAndSaysWhich) {
  // c1 looks fastest, but its samples are event times while the point's others are CUPTI
  // kernel times: not comparable, it is left out of the ranking (and of the incumbent).
  for (Strategy st : {Strategy::exhaustive, Strategy::halving}) {
    Synthetic s;
    s.noise = 0.002;
    auto c = make(s, {100, 60, 90, 120, 130}, 0);
    for (auto& x : c) s.timer[x.key] = "cupti";
    s.timer["c1"] = "events";
    SearchOptions o;
    o.strategy = st;
    o.rule = fast_rule();
    const SearchResult r = search(c, o, s);
    EXPECT_EQ(r.winner, 2) << strategy_name(st);
    EXPECT_NE(r.runner_up, 1) << strategy_name(st);
    EXPECT_EQ(r.timer, "cupti");
    EXPECT_EQ(r.unranked, 1);
  }
}

TEST(TunerSearch, RankingTimerIsTheOneMostCandidatesShare) {
  Synthetic s;
  s.noise = 0.002;
  auto c = make(s, {100, 80, 90, 50}, 0);
  s.timer = {{"c0", "cupti"}, {"c1", "events"}, {"c2", "events"}, {"c3", "cupti"}};
  s.timer["c0"] = "events";  // three events-timed, one CUPTI-timed
  SearchOptions o;
  o.strategy = Strategy::exhaustive;
  o.rule = fast_rule();
  const SearchResult r = search(c, o, s);
  EXPECT_EQ(r.timer, "events");
  EXPECT_EQ(r.winner, 1);
  EXPECT_EQ(r.unranked, 1);
}
