#pragma once
// The sweep: plans the points, runs each device's share of them through its worker process
// (a shared queue over `--devices`, a deterministic `--shard i/n` of the plan), journals
// every measurement, and at the end (or on Ctrl-C) writes results, CSV, the markdown summary
// and the config tables.
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/search/plan.hpp"
#include "tuner/run/progress.hpp"
#include "tuner/search/search.hpp"
#include "tuner/measure/timer_sizing.hpp"
#include "tuner/base/units.hpp"
#include "tuner/run/worker_process.hpp"

namespace moe::tuner {

struct SweepOptions {
  std::vector<SweepUnit> units;
  std::vector<Axis> axes;  // the problem axes given more than one value, for the results
  std::vector<std::int64_t> tokens;
  Backend backend = Backend::cpu;
  // A peer engine whose kernel the units' families run (peers/engine.hpp: "vllm", "sglang"), or
  // empty for moebench's own. On the cpu backend it runs under Triton's interpreter.
  std::string engine;
  json engine_info;  // what the engine's worker loaded (its --check line), for the results' meta
  std::vector<int> devices = {0};  // cuda ordinals, one worker each
  int threads = 0;                 // cpu backend threads (0: every hardware thread)
  std::string space = "default";   // default | full | FILE
  Strategy strategy = Strategy::halving;
  Budget budget;
  Shard shard;
  bool resume = false;
  bool retry_failed = true;  // --resume measures crashed and timed-out candidates again, once
  std::string out_dir;
  std::string tables_dir;  // empty: write no tables
  std::string dist = "uniform";
  double zipf_s = 1.2;
  std::string replay;  // .npy of captured logits or ids
  std::uint64_t seed = 0;
  TimerMode timer = TimerMode::cold;
  bool cupti = true;
  // Calls per CUDA graph for the units that are also timed in one (the layer); 0: not done.
  int graph_calls = 10;
  std::string save_invalid;  // folder for the tensors of candidates the gate finds invalid
  StopRule rule;
  double watchdog_s = 20;
  std::string command;      // the command line, for meta and provenance
  std::string resume_hint;  // printed when interrupted
  WorkerLaunch launch;      // empty argv and no function: this executable's `worker`
  ProgressMode progress = ProgressMode::plain;
  bool handle_signals = true;  // SIGINT/SIGTERM finish the current candidate, then stop
};

struct SweepOutcome {
  bool interrupted = false;
  int points = 0, points_done = 0, candidates = 0, timed = 0;
  double wall_s = 0;
  std::string journal_path, results_path, csv_path, summary_path;
  std::vector<std::string> tables;
  // Points that could not run at all (the problem refused, the inputs unreadable, preparation
  // failed): "point: reason", so the command can say so and exit non-zero.
  std::vector<std::string> failed_points;
  // Points of combinations of the axes that are no problem, or that the family refuses: in the
  // summary with their reason, and a failure only when no point could run.
  std::vector<std::string> skipped_points;
  std::string summary_md;
  json results;
};

SweepOutcome run_sweep(const SweepOptions& opt);

// The header a sweep with these options writes (and a resume must find).
json journal_header(const SweepOptions& opt, const Plan& plan, const DeviceInfo& dev);

}  // namespace moe::tuner
