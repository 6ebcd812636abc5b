#pragma once
// The search space of the engines' Triton fused_moe kernel, as their tuning scripts define it
// (vLLM's benchmark_moe.py get_configs_compute_bound, which SGLang's tuning script shares):
// BLOCK_SIZE_M x BLOCK_SIZE_N x BLOCK_SIZE_K x GROUP_SIZE_M x num_warps x num_stages, and the
// engines' default config for a problem (their get_default_config for unquantized weights).
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe::peers {

std::vector<ParamSpec> triton_config_params();
// Every config of the engines' CUDA space (1,920); both `default` and `full` are that space:
// the engines try it exhaustively, moebench's search decides what to time.
std::vector<Params> triton_space(const Params& problem, const DeviceInfo& dev);
Params triton_default(const Params& problem);
// Empty when the config can run the problem on the device; else why not (a block size that is
// not a power of two, shared memory the device lacks, fp8 problems: not taken yet).
std::string triton_invalid_reason(const Params& problem, const Params& config, const DeviceInfo& dev);

}  // namespace moe::peers
