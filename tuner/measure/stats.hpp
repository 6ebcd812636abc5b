#pragma once
// Summary statistics of timing samples (microseconds) and the noise figures the stopping
// rule, the search and compare decide on.
#include <vector>

namespace moe::tuner {

struct Stats {
  int n = 0;
  double min_us = 0, q1_us = 0, median_us = 0, q3_us = 0, max_us = 0, mean_us = 0, stdev_us = 0;
  // Relative half-width of the median's ~95% confidence interval, 1.57*IQR/sqrt(n)/median
  // (the notch of a box plot): robust to the outliers timing always has, and it shrinks as
  // samples accumulate, so a rule on it always terminates.
  double noise = 0;
  double cv() const { return mean_us > 0 ? stdev_us / mean_us : 0; }  // stdev / mean
  double ci_lo() const { return median_us * (1 - noise); }
  double ci_hi() const { return median_us * (1 + noise); }
};

// Quantiles by linear interpolation between order statistics (type 7); stdev is the sample
// standard deviation (n-1). Empty input gives n = 0 and zeros.
Stats summarize(std::vector<double> samples_us);
double quantile_sorted(const std::vector<double>& sorted, double q);

// True when the two medians cannot be told apart: their confidence intervals overlap, or
// they differ by no more than `min_rel` (the noise floor a sweep accepts).
bool within_noise(const Stats& a, const Stats& b, double min_rel);

}  // namespace moe::tuner
