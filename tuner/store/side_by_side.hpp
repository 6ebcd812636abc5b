#pragma once
// Ours beside the peers: per point, the fastest of moebench's own configs and the fastest
// peer's (a vendor library's or an engine's kernel, as the backend's `peer` hook names it)
// among the records of one sweep, so both ran on the same inputs, timer and clocks.
//   point.side_by_side = {ours: {config, config_key, median_us[, resolved_config]} | null,
//                         peer: {name, config, config_key, median_us, backend} | null,
//                         peer_over_ours: peer median / ours median (> 1: ours is faster) | null,
//                         note: why there is no ratio ("no peer measured", ...), absent with one}
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

inline constexpr const char* kNoPeerMeasured = "no peer measured";

// Whether runtime dispatch (moe::Kernel, in this library) can run a record's config: kernels of
// the cpu and cuda backends are in-library, a vendor library's among them (cuBLAS); an engine's
// kernel run by another backend's worker (vLLM's Triton) is not, so no table may name it.
bool runtime_can_call(const json& record);

// The side-by-side of one point from its records (status ok ones count; others are passed over).
json side_by_side(const std::vector<const json*>& records);

}  // namespace moe::tuner
