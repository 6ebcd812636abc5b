#pragma once
// The worker: the child process that runs candidates for one device, so a crash, a sticky
// CUDA error or a hang costs one candidate, not the sweep. The parent (worker_process.hpp)
// sends one JSON request per line; the worker answers one JSON line each:
//   probe    {backend, device}                       -> {ok, copy_gbps, cupti}
//   prepare  {family, backend, device, threads, problem, seed, dist, zipf_s, replay, timer, cupti}
//                                                     -> {ok, prepare_s, bytes, flops} | {ok:false, error}
//   validate {config, seed}                          -> {status: ok|invalid|failed|crashed, validation, error}
//   measure  {config, rule, incumbent_us, prior_us}   -> {status: ok|failed|crashed, samples_us, reason, timer, ...}
//   exit     {}                                      -> (exits)
// A sticky CUDA error is answered with status "crashed" and the worker exits.
#include <functional>
#include <string>

#include "moe/family.hpp"

namespace moe::tuner {

using FamilyResolver = std::function<const FamilyDesc&(const std::string&)>;
// moe::family: the kernel library's families.
const FamilyResolver& library_families();

// Serves requests read from `in_fd`, answering on `out_fd`, until EOF or "exit". Returns the
// process exit status. `host_timer` names the clock of host-timed samples in the replies: an
// engine's worker under Triton's interpreter says so, since those times are not a kernel's.
int worker_main(int in_fd, int out_fd, const FamilyResolver& resolve, const std::string& host_timer = "steady_clock");

}  // namespace moe::tuner
