#pragma once
// What the device threads of one sweep share: the plan and their part of it, the journal and
// what it already holds (the resume cache), progress, and the queue position.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tuner/store/journal.hpp"
#include "tuner/run/runner.hpp"

namespace moe::tuner {

struct SweepState {
  using clock_type = std::chrono::steady_clock;

  const SweepOptions& o;
  WorkerLaunch launch;
  DeviceInfo dev;
  Plan plan;
  std::vector<int> mine;  // this shard's points, in queue order
  // Points of units with `resolve` (the layer) come last in `mine`, from `first_dependent` on;
  // they start once the others are finished and their tables are written to `stage_tables`.
  std::size_t first_dependent = 0;
  std::string stage_tables;
  std::mutex phase_mu;
  std::condition_variable phase_cv;
  std::size_t independent_left = 0;  // guarded by phase_mu
  bool tables_ready = false;         // guarded by phase_mu
  std::unique_ptr<JournalWriter> journal;
  // Journal lines by key: evals by (point, config, round), preps and points by point.
  std::map<std::string, json> cache_eval, cache_prep, cache_point;
  std::set<std::string> retry;  // eval keys that crashed or timed out before: measured again (read-only once set)
  std::unique_ptr<Progress> progress;
  std::atomic<std::size_t> next{0};
  std::atomic<int> started{0};
  std::mutex mu;
  double copy_bw = 0;
  clock_type::time_point t0 = clock_type::now();
  std::exception_ptr error;

  explicit SweepState(const SweepOptions& opt) : o(opt) {}
  double elapsed() const { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

  bool has(std::map<std::string, json>& m, const std::string& k) {
    std::lock_guard lock(mu);
    return m.count(k) != 0;
  }
  json get(std::map<std::string, json>& m, const std::string& k) {
    std::lock_guard lock(mu);
    auto it = m.find(k);
    return it == m.end() ? json() : it->second;
  }
  // Journals `line` (durably) and remembers it under `k`.
  void record(std::map<std::string, json>& m, const std::string& k, const json& line) {
    journal->append(line);
    std::lock_guard lock(mu);
    m[k] = line;
  }
};

inline std::string eval_key(const std::string& point, const std::string& config, int round) {
  return point + "\n" + config + "\n" + std::to_string(round);
}

// A seed derived from the sweep's seed and a name: the same on every run and machine.
inline std::uint64_t derive_seed(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace moe::tuner
