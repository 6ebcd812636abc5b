#pragma once
// Timing of the cuda backend. Per point, the inputs are uploaded once and every candidate is
// timed on them, after ~150 ms of calls that bring the clocks up: cold mode flushes L2 (a
// read-only kernel over twice the L2) before each sample and reads the kernels' device time
// from CUPTI (CUDA events when CUPTI is unavailable or comes up short); hot mode times a CUDA graph of
// back-to-back calls with events. Also the device-to-device copy-bandwidth probe.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/measure/harness.hpp"
#include "tuner/measure/stopping.hpp"
#include "tuner/measure/timer_sizing.hpp"

namespace moe::tuner {

class CudaBench {
 public:
  CudaBench(const Prepared& p, const DeviceInfo& dev, TimerMode mode, bool use_cupti);
  ~CudaBench();
  CudaBench(const CudaBench&) = delete;
  CudaBench& operator=(const CudaBench&) = delete;

  // Makes `config` current: workspace, its launch plan, a warm-up call (which counts the
  // kernels a call launches), and for hot mode the graph.
  void set_config(const Params& config);
  // The validation gate on the bench's own device tensors (no second copy of the problem):
  // outputs poisoned, one call of `config`, downloaded and checked against the reference.
  Outcome validate(const Params& config);
  // One sample, tagged with what timed it (a statistic must never pool two timers).
  TimedSample sample();
  // What timed the last sample: "cupti", "events", "graph" or "events-loop", plus any note on
  // a fallback (CUPTI missing, graph capture refused).
  std::string timer() const;
  std::string note() const;
  int kernels_per_call() const;  // launches counted at the warm-up (CUPTI's count when none were)
  // Per kernel of a call: registers, local (spill) and shared memory, grid and block, from
  // cudaFuncGetAttributes and the launch.
  nlohmann::json kernel_attributes() const;
  int batch() const;             // calls per hot-mode sample

  // The call as an engine runs it: `calls` back-to-back calls of the current config captured on
  // the bench's stream into one CUDA graph, instantiated and replayed (vLLM's benchmark_moe
  // captures ten). "" when the graph is ready; else why the call cannot be captured (a stage
  // whose library waits on the host, a launch the capture refused), and nothing is timed. Needs
  // set_config; a later set_config or validate drops the graph.
  std::string capture_calls(int calls);
  // One replay of that graph, timed with CUDA events, per call; its timer is "graph". No L2
  // flush between the calls or before the replay, as in the engines' benchmark.
  TimedSample graph_call_sample();

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

// `moebench run`'s graph timing: `replays` replays of `calls` calls of `config` captured in one
// CUDA graph (CudaBench::capture_calls), per call; or why the call cannot be captured.
struct GraphTimes {
  std::vector<double> per_call_us;
  std::string not_timed;  // "" when timed
};
GraphTimes time_in_graph(const Prepared& p, const Params& config, const DeviceInfo& dev, int calls, int replays);

// Device-to-device cudaMemcpy bandwidth in GB/s (bytes read + written per second): the
// practical peak every candidate's GB/s is reported against.
double cuda_copy_bandwidth_gbps(int ordinal, int reps = 10);

// Waits for the device to finish its work (errors ignored: used on the way out).
void cuda_device_idle(int ordinal);

// After a failure: "" when the device works again, else the name of the sticky error that
// leaves the process unusable (the worker must then be restarted).
std::string cuda_sticky_error(int ordinal);

}  // namespace moe::tuner
