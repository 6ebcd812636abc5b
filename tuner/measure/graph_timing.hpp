#pragma once
// The layer timed as engines run it: N calls captured on one stream into one CUDA graph,
// replayed, time per call (vLLM's benchmark_moe captures ten). Beside the layer's time alone
// (the sweep's own timer), so a reader sees what launch overhead and the gaps between kernels
// cost and what a graph takes away. What is backend-independent about it lives here.
#include <string>

#include "moe/family.hpp"

namespace moe::tuner {

// Calls per graph unless --graph-calls says otherwise: the figure vLLM's benchmark uses.
inline constexpr int kDefaultGraphCalls = 10;

// Why `b` cannot time a call in a CUDA graph; "" where it can (cuda).
std::string graph_timing_unavailable(Backend b);

// A graph measurement's statuses: timed; the call cannot be captured (with the reason); the
// backend has no graphs (with the reason).
inline constexpr const char* kGraphOk = "ok";
inline constexpr const char* kGraphNotCapturable = "not capturable";
inline constexpr const char* kGraphNotApplicable = "not applicable";

}  // namespace moe::tuner
