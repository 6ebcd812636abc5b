#include "tuner/measure/timer_sizing.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "moe/error.hpp"

namespace moe::tuner {

TimerMode parse_timer_mode(std::string_view s) {
  if (s == "cold") return TimerMode::cold;
  if (s == "hot") return TimerMode::hot;
  throw Error("unknown timer mode '" + std::string(s) + "': use cold (L2 flushed before every sample) or hot (CUDA-graph batch)");
}

std::string_view timer_mode_name(TimerMode m) { return m == TimerMode::hot ? "hot" : "cold"; }

std::size_t l2_flush_bytes(std::size_t l2_bytes) {
  constexpr std::size_t fallback = std::size_t{64} << 20, cap = std::size_t{1} << 30;
  if (l2_bytes == 0) return fallback;
  return std::min(2 * l2_bytes, cap);
}

int graph_batch_size(double call_us, double target_us, int max_batch) {
  if (max_batch < 1) max_batch = 1;
  if (!(call_us > 0) || !std::isfinite(call_us)) return max_batch;
  const double n = std::ceil(target_us / call_us);
  return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(max_batch)));
}

std::size_t copy_probe_bytes(std::size_t mem_bytes) {
  constexpr std::size_t want = std::size_t{256} << 20, floor_bytes = std::size_t{1} << 20;
  if (mem_bytes == 0) return want;
  return std::max(floor_bytes, std::min(want, mem_bytes / 8));
}

}  // namespace moe::tuner
