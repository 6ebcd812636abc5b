#pragma once
// Model presets (configs/models/*.json) and Hugging Face config.json files, as problem
// parameters under the shared names of kernels/common/problem_params.hpp.
#include <string>
#include <vector>

#include "moe/params.hpp"

namespace moe::tuner {

// Directory holding the presets: $MOEBENCH_MODELS_DIR, else the source tree's configs/models,
// else the installed share/moebench/configs/models.
std::string models_dir();
std::vector<std::string> model_names();  // sorted preset names
// A preset by name, or a path to a preset JSON. Unknown names are an Error listing the presets.
Params load_model(const std::string& name_or_path);
// A Hugging Face config.json (DeepSeek-V3/Kimi, Qwen3-MoE, Mixtral, gpt-oss, Llama 4 field names).
// A missing required field is an Error naming it and the file.
Params load_hf_config(const std::string& path);
// --tp divides intermediate (Error unless it divides evenly); --ep with --ep-rank sets
// expert_begin/expert_end to that rank's slice of the routed experts.
Params apply_parallelism(Params model, int tp, int ep, int ep_rank);

}  // namespace moe::tuner
