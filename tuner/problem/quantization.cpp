#include "tuner/problem/quantization.hpp"

#include "moe/error.hpp"

namespace moe::tuner {

using nlohmann::json;

namespace {

// 4-bit integer weights with bf16 activations (docs/w4.md): "quant" = "int4" with the problem's
// group and zero_point when moebench runs the scheme, else a sentence saying what differs (so
// --dtype int4 can refuse it while bf16 tuning still loads). `bits`, `group_size` and
// `zero_point` as the quantizer wrote them (group_size -1: one scale per row).
void set_int4(Params& m, std::int64_t bits, std::int64_t group_size, bool zero_point, const std::string& also) {
  std::string quant = "int4";
  if (bits != 4) quant = std::to_string(bits) + "-bit integer weights";
  else if (group_size != 32 && group_size != 128) quant = "int4 with group_size " + std::to_string(group_size);
  else if (!also.empty()) quant = "int4 with " + also;
  m.set("quant", quant);
  if (quant != "int4") return;
  m.set("group", group_size);
  m.set("zero_point", std::int64_t{zero_point ? 1 : 0});
}

std::int64_t int_field(const json& o, const char* name, std::int64_t def, const std::string& where) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return def;
  if (!it->is_number_integer())
    throw Error(where + ": quantization_config field '" + name + "' is " + it->dump() + ", expected an integer");
  return it->get<std::int64_t>();
}

bool bool_field(const json& o, const char* name, bool def, const std::string& where) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return def;
  if (!it->is_boolean())
    throw Error(where + ": quantization_config field '" + name + "' is " + it->dump() + ", expected true or false");
  return it->get<bool>();
}

// compressed-tensors (llm-compressor): config_groups, each {weights: {num_bits, type,
// symmetric, group_size, strategy}, input_activations}. Kimi-K2-Thinking ships one group of
// int4 symmetric weights, group 32, "pack-quantized". Other schemes (fp8, activations
// quantized) are not read here.
void read_compressed_tensors(const json& q, const std::string& where, Params& m) {
  const auto groups = q.find("config_groups");
  if (groups == q.end() || !groups->is_object()) return;
  for (auto& [name, g] : groups->items()) {
    if (!g.is_object() || !g.contains("weights") || !g["weights"].is_object()) continue;
    const json& w = g["weights"];
    const std::string type = w.value("type", std::string("int"));
    if (type != "int") continue;
    const std::int64_t bits = int_field(w, "num_bits", 8, where);
    if (bits != 4) continue;
    std::string also;
    const std::string strategy = w.contains("strategy") && w["strategy"].is_string() ? w["strategy"].get<std::string>() : "group";
    if (strategy != "group") also = "strategy " + strategy;
    if (g.contains("input_activations") && !g["input_activations"].is_null()) also = "quantized activations";
    set_int4(m, bits, int_field(w, "group_size", -1, where), !bool_field(w, "symmetric", true, where), also);
    return;
  }
}

// quantization_config as Hugging Face writes it (presets copy it verbatim): "quant" = "fp8" when
// it is the 128x128 / 1x128 recipe moebench runs, "mxfp4" (gpt-oss), "int4" (compressed-tensors,
// AWQ, GPTQ, above), or a sentence saying what differs, so that --dtype fp8 (int4) can refuse it
// while bf16 tuning still loads.
}  // namespace

void read_quantization(const json& q, const std::string& where, Params& m) {
  if (!q.is_object()) throw Error(where + ": quantization_config is " + q.dump() + ", expected an object");
  const auto method = q.find("quant_method");
  if (method == q.end() || !method->is_string()) return;
  const std::string how = method->get<std::string>();
  if (how == "mxfp4") return void(m.set("quant", std::string("mxfp4")));
  if (how == "compressed-tensors") return read_compressed_tensors(q, where, m);
  // AWQ: zero points unless told otherwise; GPTQ: symmetric unless sym is false, and act-order
  // (desc_act) permutes K, which moebench does not model.
  if (how == "awq")
    return set_int4(m, int_field(q, "bits", 4, where), int_field(q, "group_size", 128, where),
                    bool_field(q, "zero_point", true, where), "");
  if (how == "gptq")
    return set_int4(m, int_field(q, "bits", 4, where), int_field(q, "group_size", 128, where), !bool_field(q, "sym", true, where),
                    bool_field(q, "desc_act", false, where) ? "desc_act (act-order)" : "");
  if (how != "fp8") return;
  std::string quant = "fp8";
  if (const auto b = q.find("weight_block_size"); b != q.end()) {
    const bool ok = b->is_array() && b->size() == 2 && (*b)[0] == 128 && (*b)[1] == 128;
    if (!ok) quant = "fp8 with weight_block_size " + b->dump();
  } else {
    quant = "fp8 without weight blocks (per-tensor scales)";
  }
  if (const auto a = q.find("activation_scheme"); a != q.end() && *a != "dynamic")
    quant = "fp8 with activation_scheme " + a->dump();
  m.set("quant", quant);
  std::string fmt = "fp32";
  if (const auto f = q.find("scale_fmt"); f != q.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "ue8m0" && *f != "fp32" && *f != "float32"))
      throw Error(where + ": quantization_config.scale_fmt is " + f->dump() + ", expected \"ue8m0\" or \"fp32\"");
    fmt = *f == "ue8m0" ? "ue8m0" : "fp32";
  }
  m.set("scale_fmt", fmt);
}

}  // namespace moe::tuner
