#pragma once
// The config files an engine reads for its Triton fused_moe kernel, written from a sweep's
// results (`moebench sweep gmm|moe-layer --backend vllm|sglang --engine-config DIR`; a layer
// point's config serves both GEMMs, as up's):
//   vLLM:   DIR/E=<E>,N=<N>,device_name=<device>[,dtype=..][,block_shape=[..]].json, what
//           get_moe_configs reads from VLLM_TUNED_CONFIG_FOLDER: {"triton_version": "..", "<M>":
//           {BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages}, ...}.
//           One config serves both of vLLM's GEMMs: the up stage's winner (its larger GEMM), the
//           down stage's where only down was swept.
//   SGLang: DIR/configs/triton_<X_Y_Z>/E=..,N=..,device_name=..[..].json for up and the same
//           name with `_down` for down, under what SGLANG_MOE_CONFIG_DIR names; token keys only
//           (its loader takes every key as a token count).
// E is the local experts (w13's first dimension), N the intermediate size per shard, M the
// token count; each entry is the chosen config of the point (the default where the winner is
// within noise of it, as in moebench's own tables).
#include <string>
#include <vector>

#include "peers/engine.hpp"
#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

// The engine's device_name: the device name with spaces as '_' (vLLM: every H200 as NVIDIA_H200); a host
// device (Triton's interpreter) is "cpu".
std::string engine_device_name(const std::string& device, peers::Engine engine = peers::Engine::vllm);

// Writes the files (atomically) and returns their paths. Error when the results hold two problems
// that the engine's file name cannot tell apart (another hidden size or top-k at the same E and N).
std::vector<std::string> write_engine_configs(const json& results, peers::Engine engine, const std::string& dir);

}  // namespace moe::tuner
