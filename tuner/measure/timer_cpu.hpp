#pragma once
// Timing of the cpu backend with a steady clock. Outputs and workspace are allocated once;
// each sample is a batch of calls long enough (~20 us) for the clock to resolve it, and
// reports the time per call.
#include <chrono>
#include <vector>

#include "tuner/measure/harness.hpp"

namespace moe::tuner {

class CpuTimer {
 public:
  CpuTimer(const Prepared& p, const Params& config, int threads);
  double sample_us();
  int batch() const { return batch_; }

 private:
  void call();
  const Prepared& p_;
  const BackendImpl& impl_;
  Params config_;
  TensorMap outputs_;
  RefMap in_, out_;
  std::vector<std::byte> ws_;
  LaunchContext ctx_;
  int batch_ = 1;
};

// Calls per sample so one sample lasts at least `target_us` (1..max_batch).
int cpu_batch_size(double call_us, double target_us = 20.0, int max_batch = 1000);

// Host memory copy bandwidth in GB/s (bytes read + written per second), the cpu's peak.
double host_copy_bandwidth_gbps(std::size_t bytes = std::size_t{64} << 20, int reps = 5);

}  // namespace moe::tuner
