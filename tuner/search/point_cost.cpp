#include "tuner/search/point_cost.hpp"

#include <algorithm>

#include "common/emu_backend.hpp"
#include "tuner/search/plan.hpp"

namespace moe::tuner {

namespace {

// Nominal rates. The device ones are an H100's order of magnitude; the host ones are what the
// reference and the cpu backend reach, within a factor of a few. Errors of that size leave
// shards within a point or two of balance; ignoring size altogether put every small point in
// one shard.
struct Rates {
  double bytes_per_s, flops_per_s, per_candidate_s;
};
constexpr Rates kDevice{2.5e12, 4e14, 3e-3};  // per candidate: plan, validation launch, L2 flushes
constexpr Rates kHost{1e10, 2e10, 2e-4};
constexpr double kHostReferenceFlops = 2e9;  // the reference is plain loops
constexpr int kSamples = 10;                 // the default stopping rule's minimum
constexpr double kMinTime = 1e-3, kMaxTime = 1.0;

}  // namespace

double estimated_point_seconds(const PlanPoint& p, Backend backend) {
  if (!p.skip.empty() || p.candidates.empty() || !p.family->estimate) return 0;
  const Cost c = p.family->estimate(p.problem);
  // The point's inputs and its reference are made on the host, once.
  const double prepare = c.bytes / kHost.bytes_per_s + c.flops / kHostReferenceFlops;
  // The emu backend runs each candidate once under the emulator (validated, never sampled), at
  // the family's emulation speed: nominal host rates put a minute of emulation at a second.
  if (backend == Backend::emu)
    return prepare + static_cast<double>(p.candidates.size()) * (kHost.per_candidate_s + emu_seconds(*p.family, p.problem));
  const Rates& r = backend == Backend::cuda ? kDevice : kHost;
  const double call = std::max(c.bytes / r.bytes_per_s, c.flops / r.flops_per_s);
  // Each candidate is validated once, then sampled until the stopping rule is met or its time
  // runs out (after one sample at least).
  const double sampling = std::max(kMinTime, std::min(kSamples * call, std::max(kMaxTime, call)));
  const double candidate = r.per_candidate_s + call + sampling;
  return prepare + static_cast<double>(p.candidates.size()) * candidate;
}

}  // namespace moe::tuner
