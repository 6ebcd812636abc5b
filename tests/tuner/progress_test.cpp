// Sweep progress: the ETA estimator on synthetic points and times (no clock), and what the
// terminal shows after the live lines are redrawn.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "tuner/search/eta.hpp"
#include "tuner/base/interrupt.hpp"
#include "tuner/run/progress.hpp"

using namespace moe::tuner;

namespace {

// One candidate per point, so a finished point is all its work.
std::vector<EtaPoint> points(const std::vector<std::pair<std::string, double>>& costs, int candidates = 1) {
  std::vector<EtaPoint> v;
  for (auto& [g, c] : costs) v.push_back({g, c, candidates});
  return v;
}

// Runs point i from t to t + seconds.
void run_point(EtaEstimator& e, int i, double t, double seconds) {
  e.point_started(i, t);
  e.candidate_done(i, false);
  e.point_finished(i, t + seconds);
}

// The screen a stream of text and the two escapes the live lines use (cursor up one line,
// erase the line) leaves, one string per line.
std::vector<std::string> screen(const std::string& text) {
  std::vector<std::string> rows(1);
  std::size_t row = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 4, "\x1b[1A") == 0) {
      if (row > 0) --row;
      i += 4;
    } else if (text.compare(i, 4, "\x1b[2K") == 0) {
      rows[row].clear();
      i += 4;
    } else if (text[i] == '\n') {
      if (++row == rows.size()) rows.emplace_back();
      ++i;
    } else {
      rows[row] += text[i++];
    }
  }
  return rows;
}

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

}  // namespace

// Four small router points done in 4 s; two gmm points 100x their size are left. A per-point
// (or per-candidate) average said 2 s; their nominal cost says 200 s.
TEST(TunerEta, RemainingWorkIsPricedBySizeNotByCount) {
  EtaEstimator e(points({{"router", 1}, {"router", 1}, {"router", 1}, {"router", 1}, {"gmm", 100}, {"gmm", 100}}), 1);
  EXPECT_LT(e.remaining_s(0), 0) << "nothing measured yet";
  for (int i = 0; i < 4; ++i) run_point(e, i, i, 1);
  EXPECT_NEAR(e.remaining_s(4), 200, 1e-9);
}

// A cpu sweep as it ran (sweep all, qwen3-30b-a3b shape at hidden 1024, intermediate 512,
// tokens 1,64,512, --max-time 200ms): per point its family, candidates, the plan's estimate and
// the seconds it took. After each point the estimate of the rest stays within 2x of what the
// rest took; the per-candidate average was 3-4x short once the gmm points came.
TEST(TunerEta, ARecordedSweepIsEstimatedWithinTwoX) {
  struct Row {
    const char* family;
    int candidates;
    double estimate, took;
  };
  const Row rows[] = {{"router", 9, 0.0108, 0.5},   {"router", 9, 0.0108, 1},    {"router", 9, 0.0111, 3},
                      {"dispatch", 3, 0.0074, 0.5}, {"dispatch", 3, 0.0145, 1},  {"dispatch", 3, 0.0645, 3},
                      {"gmm", 27, 0.5145, 6},       {"gmm", 27, 16.514, 19},     {"gmm", 36, 55.792, 39},
                      {"gmm", 18, 0.1752, 3},       {"gmm", 18, 5.6006, 13},     {"gmm", 24, 31.321, 19},
                      {"combine", 5, 0.006, 0.5},   {"combine", 5, 0.0082, 5},   {"combine", 5, 0.0582, 3},
                      {"moe-layer", 1, 0.0455, 4},  {"moe-layer", 1, 1.7336, 4}, {"moe-layer", 1, 8.1373, 6}};
  const int n = static_cast<int>(std::size(rows));
  std::vector<EtaPoint> pts;
  for (const Row& r : rows) pts.push_back({r.family, r.estimate, r.candidates});
  EtaEstimator e(pts, 1);
  double t = 0;
  for (int i = 0; i + 1 < n; ++i) {
    e.point_started(i, t);
    for (int c = 0; c < rows[i].candidates; ++c) e.candidate_done(i, false);
    t += rows[i].took;
    e.point_finished(i, t);
    double left = 0;
    for (int j = i + 1; j < n; ++j) left += rows[j].took;
    const double eta = e.remaining_s(t);
    EXPECT_GT(eta, left / 2) << "after point " << i;
    EXPECT_LT(eta, left * 2) << "after point " << i;
  }
}

// What the nominal rates do not see (worker round trips, validation, sampling until the noise
// settles) is learnt per family as seconds per candidate; a family not measured yet borrows the
// sweep's, and its work is taken at the nominal rates.
TEST(TunerEta, OverheadPerCandidateIsLearntPerFamily) {
  EtaEstimator e({{"router", 1, 10}, {"gmm", 20, 4}, {"gmm", 40, 4}}, 1);
  run_point(e, 0, 0, 6);  // 1 nominal second of work and 10 candidates: 0.5 s each beyond it
  EXPECT_NEAR(e.remaining_s(6), 4 * 0.5 + 20 + 4 * 0.5 + 40, 1e-9);
  e.point_started(1, 6);
  for (int i = 0; i < 4; ++i) e.candidate_done(1, false);
  e.point_finished(1, 46);  // 20 nominal seconds took 40: 5 s per candidate beyond them
  EXPECT_NEAR(e.remaining_s(46), 4 * 5 + 40, 1e-9);
}

// A family that runs faster than the nominal rates say has its remaining work scaled down.
TEST(TunerEta, WorkFasterThanNominalIsScaledDown) {
  EtaEstimator e({{"gmm", 100, 2}, {"gmm", 100, 2}}, 1);
  e.point_started(0, 0);
  e.candidate_done(0, false);
  e.candidate_done(0, false);
  e.point_finished(0, 50);
  EXPECT_NEAR(e.remaining_s(50), 50, 1e-9);
}

TEST(TunerEta, PartlyDonePointsAndDevicesSideBySide) {
  // Two devices; a point of 4 candidates, 2 done after 8 s: 4 s per candidate, 1 per unit.
  EtaEstimator e(points({{"gmm", 16}, {"gmm", 16}}, 4), 2);
  e.point_started(0, 0);
  e.candidate_done(0, false);
  e.candidate_done(0, false);
  // Left: half of point 0 (8 units) and point 1 (16 units) at 1 s per unit, on two devices.
  EXPECT_NEAR(e.remaining_s(8), 12, 1e-9);
}

// A resumed sweep replays candidates from its journal in no time: they are done, but they must
// not make the rate look fast.
TEST(TunerEta, ReplayedCandidatesDoNotSetTheRate) {
  EtaEstimator e(points({{"gmm", 10}, {"gmm", 10}, {"gmm", 10}}, 2), 1);
  e.point_started(0, 0);
  e.candidate_done(0, true);
  e.candidate_done(0, true);
  e.point_finished(0, 0);
  EXPECT_LT(e.remaining_s(0), 0) << "replayed work measures nothing";
  e.point_started(1, 0);
  e.candidate_done(1, true);
  e.candidate_done(1, false);  // 5 units in 5 s
  e.point_finished(1, 5);
  EXPECT_NEAR(e.remaining_s(5), 10, 1e-9);
}

// Without expected costs every candidate weighs the same (the fallback), still per family.
TEST(TunerEta, UnknownCostsWeighCandidates) {
  EtaEstimator e({{"router", 0, 2}, {"gmm", 0, 3}, {"gmm", 0, 3}}, 1);
  e.point_started(0, 0);
  e.candidate_done(0, false);
  e.candidate_done(0, false);
  e.point_finished(0, 2);  // 1 s per candidate
  e.point_started(1, 2);
  e.candidate_done(1, false);
  e.candidate_done(1, false);
  e.candidate_done(1, false);
  e.point_finished(1, 32);  // 10 s per candidate
  EXPECT_NEAR(e.remaining_s(32), 30, 1e-9);
}

// The time of the candidate still running belongs to no finished work: while it runs, the
// estimate must not grow with it (it did, from 46 minutes to 4.8 when the point finished).
TEST(TunerEta, ACandidateStillRunningDoesNotInflateTheEstimate) {
  EtaEstimator e({{"gmm", 0, 4}, {"gmm", 0, 4}, {"gmm", 0, 4}}, 1);
  e.point_started(0, 0);
  e.candidate_done(0, false, 1);
  e.candidate_done(0, false, 2);  // 1 s per candidate; the third has run for 58 s by t = 60
  const double at_2 = e.remaining_s(2), at_60 = e.remaining_s(60);
  EXPECT_NEAR(at_2, 10, 1e-9);  // 2 left here + 8 in the other points, 1 s each
  EXPECT_NEAR(at_60, at_2, 1e-9);
}

// Ctrl-C's handler writes its message under the live lines; the next redraw used to move up
// over it and erase it. It must stay on screen, and so must the lines drawn after it.
TEST(TunerProgress, RedrawKeepsTheInterruptMessage) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(ProgressMode::tty, 1, {{7, {"scale", 1, 2}}}, 10, f);
    p.candidate_started(0, 7, "scale/w=64 t=8", "tile=16");
    p.point_finished(0, 7, "scale/w=64 t=8", "tile=16", 1.0, 2, 2, 0);  // forces a draw
    // What the handler does (tuner/base/interrupt.cpp), into the same stream.
    interrupts().fetch_add(1);
    std::fputs("\nmoebench: interrupted: finishing the current candidate (interrupt again to abandon it)\n", f);
    p.message("moebench: warning: something else");
    p.finish();
  }
  interrupts() = 0;
  const std::vector<std::string> rows = screen(contents(f));
  std::fclose(f);
  std::string all;
  for (auto& r : rows) all += r + "\n";
  EXPECT_NE(all.find("moebench: interrupted: finishing the current candidate"), std::string::npos) << all;
  EXPECT_NE(all.find("moebench: warning: something else"), std::string::npos) << all;
  std::string last;
  for (auto& r : rows)
    if (!r.empty()) last = r;
  EXPECT_EQ(last.rfind("[dev 0] 0/2 candidates, 1/1 points", 0), 0u) << "the live line is drawn last:\n" << all;
}

// On a terminal a live line is at most 160 characters: the layer's long config is what gets
// cut, never the best time and the ETA after it.
TEST(TunerProgress, LiveLineCutsTheConfigNotTheEta) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  const std::string config = "combine=auto,dispatch=auto,gmm_down=auto,gmm_up=auto,router=auto," + std::string(200, 'x');
  {
    Progress p(ProgressMode::tty, 1, {{3, {"moe-layer", 1, 2}}, {4, {"moe-layer", 1, 2}}}, 10, f);
    p.candidate_started(0, 3, "moe-layer T=64", config);
    p.candidate_finished(0, "ok", 12.5, true);
    p.point_finished(0, 3, "moe-layer T=64", config, 12.5, 1, 2, 1);  // forces a draw, with a rate measured
    p.finish();
  }
  const std::vector<std::string> rows = screen(contents(f));
  std::fclose(f);
  std::string last;
  for (auto& r : rows)
    if (!r.empty()) last = r;
  EXPECT_LE(last.size(), 160u) << last;
  EXPECT_NE(last.find("moe-layer T=64 combine=auto"), std::string::npos) << last;
  EXPECT_NE(last.find("... | best 12.500 us | ETA "), std::string::npos) << last;
}
