#include "tuner/measure/stats.hpp"

#include <algorithm>
#include <cmath>

namespace moe::tuner {

double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  const double pos = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

Stats summarize(std::vector<double> v) {
  Stats st;
  if (v.empty()) return st;
  std::sort(v.begin(), v.end());
  st.n = static_cast<int>(v.size());
  st.min_us = v.front();
  st.max_us = v.back();
  st.q1_us = quantile_sorted(v, 0.25);
  st.median_us = quantile_sorted(v, 0.5);
  st.q3_us = quantile_sorted(v, 0.75);
  double sum = 0;
  for (double x : v) sum += x;
  st.mean_us = sum / st.n;
  double ss = 0;
  for (double x : v) ss += (x - st.mean_us) * (x - st.mean_us);
  st.stdev_us = st.n > 1 ? std::sqrt(ss / (st.n - 1)) : 0;
  st.noise = st.median_us > 0 ? 1.57 * (st.q3_us - st.q1_us) / std::sqrt(static_cast<double>(st.n)) / st.median_us : 0;
  return st;
}

bool within_noise(const Stats& a, const Stats& b, double min_rel) {
  if (a.n == 0 || b.n == 0) return false;
  const double lo = std::min(a.median_us, b.median_us), hi = std::max(a.median_us, b.median_us);
  if (hi <= lo * (1 + min_rel)) return true;
  return a.ci_lo() <= b.ci_hi() && b.ci_lo() <= a.ci_hi();
}

}  // namespace moe::tuner
