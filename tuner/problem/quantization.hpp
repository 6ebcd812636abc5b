#pragma once
// A model's quantization_config (Hugging Face's, copied verbatim into presets), read into the
// model's problem parameters: quant, and scale_fmt (fp8) or group and zero_point (int4).
#include <nlohmann/json.hpp>
#include <string>

#include "moe/params.hpp"

namespace moe::tuner {

void read_quantization(const nlohmann::json& q, const std::string& where, Params& m);

}  // namespace moe::tuner
