#pragma once
// The layer's decode path (config path=decode): one kernel does the router's and dispatch's work
// for a batch of at most 64 tokens (front_kernels.cuh), then gmm up, gmm down and combine run as
// stages. Its outputs are the router's and dispatch's exactly (DESIGN.md 1.1, 1.2, 1.6).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

// The layer config's path, front_ctas, fold_combine and l2_prefetch parameters.
std::vector<ParamSpec> front_config_params();
bool decode_path(const Params& layer_config);
// path=decode with fold_combine=1: gmm down does combine's work, and combine is not launched.
bool fold_combine(const Params& layer_config);

// path=decode's l2_prefetch: 0 (none, and on path=stages), 1 (w13) or 2 (w13 and w2).
int l2_prefetch(const Params& layer_config);

// Why the decode front cannot run this layer problem on backend b (empty when it can).
std::string front_invalid_reason(Backend b, const Params& layer_problem, const DeviceInfo& dev);

// The front's CTAs: front_ctas when given, else enough to share the gather's rows.
int front_ctas(const Params& layer_problem, const Params& layer_config, int sm_count);

// Runs the front on backend b (cuda or emu): `in` holds logits, x and (with the problem's bias)
// bias; `out` weights, ids, offsets, src, dst, x_sorted and, for fp8, x_scale, as dispatch sizes them,
// and the gmm stages' tile maps for block_m map_bm[0] (up: "up_map") and map_bm[1] (down:
// "down_map"); 0: that stage gets none (its kernel takes none, gmm_tile_map_block_m). With
// "fold_done" in `out` (down folds combine), it zeroes those counters. With l2_prefetch, `in`
// also holds w13 (and, at 2, w2), whose active experts' blocks it sends toward L2.
void run_front(Backend b, const Params& layer_problem, const Params& layer_config, const RefMap& in, const RefMap& out,
               const LaunchContext& ctx, std::array<int, 2> map_bm = {0, 0});

}  // namespace moe
