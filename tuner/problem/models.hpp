#pragma once
// Model presets (configs/models/*.json) and Hugging Face config.json files, as problem
// parameters under the shared names of kernels/common/problem_params.hpp.
//
// Every loader returns exactly the model's problem parameters: experts, topk, shared, groups,
// topk_group, hidden, intermediate (int64), bias, renormalize (int64 0/1), rsf (double),
// group_score, scoring, dtype (strings). A family takes the ones it has. A model served in fp8
// (quantization_config with quant_method fp8) adds quant ("fp8" for the 128x128 / 1x128 recipe,
// else a phrase saying how it differs) and scale_fmt (fp32 | ue8m0); dtype stays the
// activations' type, and --dtype fp8 selects the recipe. A model with 4-bit weights (docs/w4.md)
// adds quant "mxfp4" (quant_method mxfp4, gpt-oss), or "int4" with group (32 | 128) and zero_point
// (compressed-tensors' config_groups, AWQ, GPTQ), or a phrase saying how it differs; --dtype
// mxfp4 | int4 selects them. A model whose experts are not silu(gate)*up on split w13 without
// biases (gpt-oss) adds the expert function's parameters: activation, alpha, limit, w13_layout,
// w13_block, bias13, bias2 (pp::expert_fn()).
#include <string>
#include <vector>

#include "moe/params.hpp"

namespace moe::tuner {

// Directory holding the presets: $MOEBENCH_MODELS_DIR, else share/moebench/configs/models beside
// the executable (an installed moebench), else the source tree's configs/models.
std::string models_dir();
std::vector<std::string> model_names();  // sorted preset names
// A preset by name, or a path (ending in .json or holding a '/') to a preset JSON or to a
// Hugging Face config.json (recognised by having no "experts" field but HF field names).
// Unknown names are an Error listing the presets; a preset missing a field is an Error naming
// the field and the file.
Params load_model(const std::string& name_or_path);
// A Hugging Face config.json (DeepSeek-V3/Kimi, Qwen3-MoE, Mixtral, gpt-oss, Llama 4 field names;
// a nested text_config, as in Kimi-VL and Llama 4, is read first). A missing required field is
// an Error naming every accepted spelling and the file. Qwen2-MoE-style gated shared experts
// (shared_expert_intermediate_size) have no fused form: they are left out (shared = 0) with a
// warning on stderr, and only the routed experts are benchmarked.
Params load_hf_config(const std::string& path);
// --tp divides intermediate (Error unless it divides evenly). With ep > 1, --ep-rank r gets
// expert_begin = r*E/ep and expert_end = (r+1)*E/ep: a slice of the routed experts only.
// Shared-expert slots (ids E..E+S-1) are then local to no rank, so dispatch drops them
// (dst = -1), as EP deployments run shared experts as a separate dense MLP. ep == 1 sets no
// range (every expert is local, shared ones included).
Params apply_parallelism(Params model, int tp, int ep, int ep_rank);
// The powers of two up to 64 (the --tp values deployments use) that leave an intermediate size
// a multiple of 128, fp8's block.
std::vector<int> fp8_tp_values(std::int64_t intermediate);
// Refuses a family's fp8 problem the model cannot run: its own fp8 is another recipe, or D or
// I/tp is not a multiple of 128 (naming the --tp values that work).
void check_fp8_model(const Params& model, const Params& problem, int tp);
// The same for a 4-bit problem (dtype mxfp4 | int4): the model's own int4 is a scheme moebench
// does not run, or D or I/tp is not a multiple of the group.
void check_w4_model(const Params& model, const Params& problem, int tp);

}  // namespace moe::tuner
