// Sweep progress: the ETA estimator on synthetic points and times (no clock), and what the
// terminal shows after the live lines are redrawn.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tuner/eta.hpp"
#include "tuner/interrupt.hpp"
#include "tuner/progress.hpp"

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
// (or per-candidate) average said 2 s; their expected cost at the rate measured says 200 s.
TEST(TunerEta, RemainingWorkIsPricedBySizeNotByCount) {
  EtaEstimator e(points({{"router", 1}, {"router", 1}, {"router", 1}, {"router", 1}, {"gmm", 100}, {"gmm", 100}}), 1);
  EXPECT_LT(e.remaining_s(0), 0) << "nothing measured yet";
  for (int i = 0; i < 4; ++i) run_point(e, i, i, 1);
  EXPECT_NEAR(e.remaining_s(4), 200, 1e-9);
}

// The gmm's own measured rate prices the gmm left, whatever the router's rate was.
TEST(TunerEta, EachFamilyIsPricedAtItsOwnRate) {
  EtaEstimator e(points({{"router", 10}, {"gmm", 10}, {"gmm", 10}, {"gmm", 20}, {"layer", 10}}), 1);
  run_point(e, 0, 0, 1);   // router: 0.1 s per unit
  run_point(e, 1, 1, 30);  // gmm: 3 s per unit
  // gmm left: 30 units at 3 s; the layer, not measured yet: 10 units at the sweep's 31 s / 20 units.
  EXPECT_NEAR(e.remaining_s(31), 90 + 10 * 31.0 / 20, 1e-9);
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

// Ctrl-C's handler writes its message under the live lines; the next redraw used to move up
// over it and erase it. It must stay on screen, and so must the lines drawn after it.
TEST(TunerProgress, RedrawKeepsTheInterruptMessage) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(ProgressMode::tty, 1, {{7, {"scale", 1, 2}}}, 10, f);
    p.candidate_started(0, 7, "scale/w=64 t=8", "tile=16");
    p.point_finished(0, 7, "scale/w=64 t=8", "tile=16", 1.0, 2, 2, 0);  // forces a draw
    // What the handler does (tuner/interrupt.cpp), into the same stream.
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
