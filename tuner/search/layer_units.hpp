#pragma once
// What `sweep moe-layer` and `sweep all` tune for a layer: the layer's own stage problems
// (gmm up and down included), then the layer itself, timed with the configs the stage points
// chose, so its tables and its per-stage breakdown come from one sweep.
#include <string>
#include <vector>

#include "tuner/search/plan.hpp"

namespace moe::tuner {

// `layer_problem` is complete but for tokens. `slice` (expert_begin/expert_end from --ep, or
// empty) goes to every stage whose family takes it: dispatch and the gmm stages. A stage
// family without backend `b` is left out with a line in `warnings`; so is the layer, when it
// lacks the backend.
std::vector<SweepUnit> layer_units(const Params& layer_problem, const Params& slice, Backend b,
                                   std::vector<std::string>& warnings);

// The layer config with every "auto" stage replaced by its choice from `dirs` (explicit
// stages stay as given), and per stage where the config came from: family, config, how
// (exact | nearest | default | explicit), and the table and entry.
ResolvedConfig resolve_layer_config(Backend b, const Params& problem, const Params& config, const DeviceInfo& dev,
                                    const std::vector<std::string>& dirs);

}  // namespace moe::tuner
