#pragma once
// How many kernels one layer call launches on a described Hopper, per preset, dtype, path and
// token count: the layer's own host code runs against a recording stand-in for the CUDA runtime,
// so the count is the launch sequence a GPU would see, with no GPU.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/family.hpp"

namespace moe::tuner {

using json = nlohmann::json;

struct LayerLaunch {
  unsigned grid = 0, block = 0;
  std::size_t smem = 0;
};

// The kernels one call of the cuda layer backend launches for `layer_problem` under `config`
// (stages "auto": the defaults, no table is read). Throws Error where the config is invalid or
// the host code stops before launching.
std::vector<LayerLaunch> layer_call_launches(const Params& layer_problem, const Params& config);

// The token counts the report counts at: decode up to the front's limit.
const std::vector<std::int64_t>& layer_launch_tokens();

// {"device", "tokens": [...], "rows": [{"model", "dtype", "path", "activation", "calls": [per token
//  count: {"tokens", "fold_combine", "kernels", "grids": [each launch's CTAs], "not_folded": why}
//  or {"tokens", "invalid": why}]}, ...]}
json layer_kernels_per_call();

}  // namespace moe::tuner
