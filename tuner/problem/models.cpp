#include "tuner/problem/models.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/problem_params.hpp"
#include "moe/dtype.hpp"
#include "io/json_text.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"
#include "tuner/base/spelling.hpp"
#include "tuner/problem/quantization.hpp"

namespace moe::tuner {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<ParamSpec> model_specs() {
  return {pp::experts(), pp::topk(),  pp::shared(), pp::groups(), pp::topk_group(),  pp::group_score(),
          pp::scoring(), pp::bias(),  pp::renormalize(), pp::rsf(), pp::hidden(), pp::intermediate(),
          pp::dtype("bf16", {"bf16", "f16", "f32"})};
}

// The expert function's parameters (gpt-oss's clamped SwiGLU, interleaved w13, biases): a preset
// may set them; left out, they are the SwiGLU every other model has and are not set.
std::vector<ParamSpec> expert_fn_specs() { return pp::expert_fn(); }

// The largest routed_scaling_factor a config may hold.
constexpr double kMaxRsf = 1000;

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string r;
  for (auto& s : v) r += (r.empty() ? "" : sep) + s;
  return r;
}

json parse_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(what + " '" + path + "' does not exist");
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    throw Error(what + " '" + path + "' " + why + ": give a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + what + " '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  io::check_json_text(ss.str(), what + " '" + path + "'", "give a JSON object");
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception& e) {
    throw Error(what + " '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(what + " '" + path + "' is not a JSON object");
  return j;
}

// Relations between parameters that a spec's per-value range cannot express; checked here so a
// bad file fails when it is loaded, naming the file, not later inside some family.
void check_model(const Params& m, const std::string& where) {
  try {
    for (auto& s : model_specs()) check_value(s, m.at(s.name));
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  const auto E = m.i("experts"), k = m.i("topk"), G = m.i("groups"), TG = m.i("topk_group");
  auto bad = [&](const std::string& why) { throw Error(where + ": " + why); };
  if (E % G != 0) bad("groups = " + std::to_string(G) + " does not divide experts = " + std::to_string(E));
  if (TG > G) bad("topk_group = " + std::to_string(TG) + " is more than groups = " + std::to_string(G));
  if (k > TG * (E / G))
    bad("topk = " + std::to_string(k) + " is more than the " + std::to_string(TG * (E / G)) +
        " experts in the topk_group = " + std::to_string(TG) + " kept groups");
}

std::string normalise_dtype(const std::string& s) {
  try {
    return std::string(dtype_name(parse_dtype(s)));
  } catch (const Error&) {
    return s;  // check_model reports it with the allowed names
  }
}

// ---- presets

Params load_preset(const std::string& path) {
  const json j = parse_json_file(path, "model preset");
  const std::string where = "model preset '" + path + "'";
  std::vector<std::string> names;
  for (auto& s : model_specs()) names.push_back(s.name);
  for (auto& s : expert_fn_specs()) names.push_back(s.name);
  for (auto& [k, v] : j.items()) {
    if (k == "name" || k == "source" || k == "notes" || k == "quantization_config") continue;
    if (std::find(names.begin(), names.end(), k) == names.end())
      throw Error(where + " has an unknown field '" + k + "' (fields: " + join(names) +
                  ", name, source, notes, quantization_config)");
  }
  Params m;
  std::vector<ParamSpec> specs = model_specs();
  for (auto& s : expert_fn_specs()) specs.push_back(s);
  const std::size_t required = model_specs().size();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& s = specs[i];
    if (!j.contains(s.name) && i >= required) continue;
    if (!j.contains(s.name)) throw Error(where + " is missing the field '" + s.name + "' (" + s.help + ")");
    const json& v = j.at(s.name);
    auto wrong = [&](const char* want) {
      throw Error(where + ": field '" + s.name + "' is " + v.dump() + ", expected " + want);
    };
    switch (s.kind) {
      case ParamKind::Int:
        if (!v.is_number_integer()) wrong("an integer");
        m.set(s.name, v.get<std::int64_t>());
        break;
      case ParamKind::Bool:
        if (v.is_boolean()) m.set(s.name, std::int64_t{v.get<bool>() ? 1 : 0});
        else if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1))
          m.set(s.name, v.get<std::int64_t>());
        else wrong("0, 1, true or false");
        break;
      case ParamKind::Float:
        if (!v.is_number()) wrong("a number");
        m.set(s.name, v.get<double>());
        break;
      case ParamKind::Choice:
        if (!v.is_string()) wrong("a string");
        m.set(s.name, s.name == "dtype" ? normalise_dtype(v.get<std::string>()) : v.get<std::string>());
        break;
    }
    if (i >= required) try {
        check_value(s, m.at(s.name));
      } catch (const Error& e) {
        throw Error(where + ": " + e.what());
      }
  }
  check_model(m, where);
  if (j.contains("quantization_config")) read_quantization(j.at("quantization_config"), where, m);
  return m;
}

// A JSON object with Hugging Face field names rather than moebench's.
bool looks_like_hf(const json& j) {
  if (j.contains("experts")) return false;
  for (const char* k : {"model_type", "architectures", "text_config", "n_routed_experts", "num_local_experts", "num_experts"})
    if (j.contains(k)) return true;
  return false;
}

// ---- Hugging Face config.json

class HfConfig {
 public:
  explicit HfConfig(const std::string& path) : path_(path), root_(parse_json_file(path, "Hugging Face config")) {
    if (root_.contains("text_config") && root_.at("text_config").is_object()) text_ = &root_.at("text_config");
  }
  HfConfig(const HfConfig&) = delete;  // text_ points into root_
  HfConfig& operator=(const HfConfig&) = delete;

  // The first of `names` present (and not null), in text_config first, then at the top level.
  const json* find(std::initializer_list<const char*> names, std::string* found = nullptr) const {
    for (const json* scope : {text_, &root_}) {
      if (!scope) continue;
      for (const char* n : names) {
        auto it = scope->find(n);
        if (it != scope->end() && !it->is_null()) {
          if (found) *found = n;
          return &*it;
        }
      }
    }
    return nullptr;
  }

  std::int64_t integer(std::initializer_list<const char*> names, const char* meaning, const std::int64_t* def) const {
    std::string name;
    const json* v = find(names, &name);
    if (!v) {
      if (def) return *def;
      std::vector<std::string> all(names.begin(), names.end());
      throw Error("Hugging Face config '" + path_ + "' has no " + meaning + ": none of " + join(all) +
                  " is set" + (text_ ? " (looked in text_config and the top level)" : ""));
    }
    if (v->is_number_integer()) return v->get<std::int64_t>();
    if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() && std::fabs(v->get<double>()) < 1e15)
      return static_cast<std::int64_t>(v->get<double>());
    throw Error("Hugging Face config '" + path_ + "': field '" + name + "' (" + meaning + ") is " + v->dump() +
                ", expected an integer");
  }

  double number(std::initializer_list<const char*> names, const char* meaning, double def) const {
    std::string name;
    const json* v = find(names, &name);
    if (!v) return def;
    if (!v->is_number())
      throw Error("Hugging Face config '" + path_ + "': field '" + name + "' (" + meaning + ") is " + v->dump() +
                  ", expected a number");
    return v->get<double>();
  }

  // true/false, or -1 when absent.
  int flag(std::initializer_list<const char*> names, const char* meaning) const {
    std::string name;
    const json* v = find(names, &name);
    if (!v) return -1;
    if (v->is_boolean()) return v->get<bool>() ? 1 : 0;
    if (v->is_number_integer() && (v->get<std::int64_t>() == 0 || v->get<std::int64_t>() == 1))
      return static_cast<int>(v->get<std::int64_t>());
    throw Error("Hugging Face config '" + path_ + "': field '" + name + "' (" + meaning + ") is " + v->dump() +
                ", expected true or false");
  }

  // A name the model's code switches on: a value that is not a string would silently pick the
  // default router (softmax, no bias) for a model that routes otherwise.
  std::string word(std::initializer_list<const char*> names) const {
    std::string name;
    const json* v = find(names, &name);
    if (!v || v->is_null()) return std::string();
    if (!v->is_string())
      throw Error("Hugging Face config '" + path_ + "': field '" + name + "' is " + v->dump().substr(0, 40) +
                  ", expected a string");
    return v->get<std::string>();
  }

  // Both model_types: Llama 4 says "llama4" outside and "llama4_text" inside, Kimi-VL
  // "kimi_vl" outside and "deepseek_v3" inside.
  bool model_type_is(std::initializer_list<const char*> types) const {
    for (const json* scope : {text_, &root_}) {
      if (!scope) continue;
      auto it = scope->find("model_type");
      if (it == scope->end() || !it->is_string()) continue;
      for (const char* t : types)
        if (it->get<std::string>() == t) return true;
    }
    return false;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  json root_;
  const json* text_ = nullptr;
};

}  // namespace

std::string models_dir() {
  if (const char* e = std::getenv("MOEBENCH_MODELS_DIR"); e && *e) return e;
  // An installed binary reads its own installation's presets, not the tree it was built from.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path beside =
      ec ? fs::path("share/moebench/configs/models")
         : (exe.parent_path() / ".." / "share" / "moebench" / "configs" / "models").lexically_normal();
  if (fs::is_directory(beside, ec)) return beside.string();
#ifdef MOEBENCH_SOURCE_DIR
  if (fs::is_directory(MOEBENCH_SOURCE_DIR "/configs/models", ec)) return MOEBENCH_SOURCE_DIR "/configs/models";
#endif
  return beside.string();
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(models_dir(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A Hugging Face repository a preset describes, and whether its weights are fp8.
struct HfRepo {
  std::string preset;  // "" when no preset names it
  bool fp8 = false;
  std::string fp8_id;  // the fp8 repository of a bf16 one, as the preset's source spells it
};

// A Hugging Face model id ("mistralai/Mixtral-8x7B"), as vLLM's --model takes it: the preset
// whose source names that model (a version suffix may be left out). A source reads
// "ID config.json; fp8: FP8_ID": ID holds bf16 weights and FP8_ID the block-scaled fp8 ones;
// without an fp8 id, ID's weights are what the preset's quantization_config says (DeepSeek-V3
// and Kimi-K2 are published in fp8 only).
static HfRepo preset_for_hf_id(const std::string& id) {
  const auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const auto names_it = [](const std::string& source_id, const std::string& want) {
    return !source_id.empty() && (source_id == want || (source_id.rfind(want, 0) == 0 && source_id[want.size()] == '-'));
  };
  const std::string want = lower(id);
  HfRepo best;
  for (const std::string& name : model_names()) {
    std::ifstream in(fs::path(models_dir()) / (name + ".json"));
    const json j = json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("source") || !j["source"].is_string()) continue;
    const std::string original = j["source"].get<std::string>(), src = lower(original);
    const std::string source_id = src.substr(0, src.find(' '));
    const std::size_t at = src.find("fp8: ");
    const std::string fp8_id = at == std::string::npos ? "" : src.substr(at + 5, src.find_first_of(" ;,)", at + 5) - at - 5);
    const bool quantized = j.contains("quantization_config") && j["quantization_config"].is_object() &&
                           j["quantization_config"].value("quant_method", "") == "fp8";
    // The exact id wins over a prefix of another ("Qwen/Qwen3-30B-A3B" is a prefix of its -FP8).
    if (source_id == want || fp8_id == want)
      return {name, fp8_id == want || (fp8_id.empty() && quantized),
              fp8_id.empty() ? "" : original.substr(at + 5, fp8_id.size())};
    if (best.preset.empty() && (names_it(fp8_id, want) || names_it(source_id, want)))
      best = {name, names_it(fp8_id, want) || (fp8_id.empty() && quantized),
              fp8_id.empty() ? "" : original.substr(at + 5, fp8_id.size())};
  }
  return best;
}

Params load_model(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  std::error_code exists_ec;
  const bool hf_id = is_path && !name_or_path.ends_with(".json") && !fs::exists(name_or_path, exists_ec) &&
                     std::count(name_or_path.begin(), name_or_path.end(), '/') == 1 && name_or_path.front() != '/' &&
                     name_or_path.front() != '.';
  if (hf_id) {
    const HfRepo repo = preset_for_hf_id(name_or_path);
    if (repo.preset.empty())
      throw Error("--model '" + name_or_path + "' is not a file, and no preset is that Hugging Face model: --model takes "
                  "a preset name (" + join(model_names()) + ") or a preset file; for another model, download its "
                  "config.json and give it with --hf-config config.json");
    Params m = load_preset((fs::path(models_dir()) / (repo.preset + ".json")).string());
    // The repository's weights decide the dtype, as vLLM's --model of that id would run it.
    if (repo.fp8) {
      m.set("dtype", std::string("fp8"));
      std::fprintf(stderr, "moebench: note: --model %s is the preset '%s' with dtype fp8 (its weights are fp8)\n",
                   name_or_path.c_str(), repo.preset.c_str());
    } else {
      // A bf16 repository of an fp8 model; a 4-bit model's repository holds its 4-bit weights.
      if (!m.has("quant") || m.s("quant").rfind("fp8", 0) == 0) m.erase("quant");
      m.erase("scale_fmt");
      std::fprintf(stderr, "moebench: note: --model %s is the preset '%s' with dtype %s%s\n", name_or_path.c_str(),
                   repo.preset.c_str(), m.s("dtype").c_str(),
                   repo.fp8_id.empty() ? "" : (" (its fp8 weights are " + repo.fp8_id + ")").c_str());
    }
    return m;
  }
  if (is_path) {
    const json j = parse_json_file(name_or_path, "model file");
    if (looks_like_hf(j)) return load_hf_config(name_or_path);
    return load_preset(name_or_path);
  }
  const std::string dir = models_dir();
  const std::string file = (fs::path(dir) / (name_or_path + ".json")).string();
  std::error_code ec;
  if (!name_or_path.empty() && fs::is_regular_file(file, ec)) return load_preset(file);
  const auto names = model_names();
  if (names.empty())
    throw Error("unknown model '" + name_or_path + "': no presets found in '" + dir +
                "' (set MOEBENCH_MODELS_DIR to the configs/models directory), or give a path to a preset "
                "or a Hugging Face config.json");
  throw Error("unknown model '" + name_or_path + "'" + did_you_mean(name_or_path, names) + ": the presets are " +
              join(names) + " (in '" + dir + "'), or give a path to a preset or a Hugging Face config.json");
}

Params load_hf_config(const std::string& path) {
  const HfConfig c(path);
  const bool llama4 = c.model_type_is({"llama4", "llama4_text"});
  Params m;
  m.set("experts", c.integer({"n_routed_experts", "num_local_experts", "num_experts"}, "number of routed experts", nullptr));
  m.set("topk", c.integer({"num_experts_per_tok", "moe_topk", "experts_per_token", "num_experts_per_token"},
                          "number of experts per token", nullptr));
  m.set("hidden", c.integer({"hidden_size"}, "hidden size", nullptr));
  // These models keep the dense MLP's size in intermediate_size and the experts' in
  // moe_intermediate_size: without the latter, intermediate_size would be silently wrong
  // (Qwen3-30B-A3B: 6144, 8x its experts' 768).
  if (c.model_type_is({"qwen2_moe", "qwen3_moe", "qwen3_next", "deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe"}) &&
      !c.find({"moe_intermediate_size"}) && c.find({"intermediate_size"}))
    throw Error("Hugging Face config '" + path + "' has no moe_intermediate_size, the experts' intermediate size " +
                "(its intermediate_size, " + c.find({"intermediate_size"})->dump().substr(0, 20) +
                ", is the dense MLP's): a " + c.word({"model_type"}) +
                " config needs it; give the model's unedited config.json");
  m.set("intermediate", c.integer({"moe_intermediate_size", "intermediate_size"}, "expert intermediate size", nullptr));

  // DeepSeek's topk_method names the router: noaux_tc (V3: sigmoid + bias, groups scored by
  // their top-2 sum), group_limited_greedy (V2: groups scored by their best expert), greedy
  // (V2-Lite: no groups, whatever n_group says).
  const std::string method = c.word({"topk_method"});
  const std::int64_t one = 1;
  std::int64_t groups = c.integer({"n_group", "num_expert_group"}, "number of expert groups", &one);
  std::int64_t topk_group = c.integer({"topk_group"}, "number of groups kept", &one);
  if (method == "greedy") groups = topk_group = 1;
  m.set("groups", groups);
  m.set("topk_group", topk_group);
  m.set("group_score", std::string(method == "group_limited_greedy" ? "max" : "top2_sum"));

  // Llama 4 applies a sigmoid to its top-1 logit without saying so in the config.
  std::string scoring = c.word({"scoring_func", "moe_router_activation_func"});
  if (scoring.empty()) scoring = llama4 ? "sigmoid" : "softmax";
  if (scoring != "softmax" && scoring != "sigmoid")
    throw Error("Hugging Face config '" + path + "': scoring function '" + scoring +
                "' is not supported (moebench routes with softmax or sigmoid)");
  m.set("scoring", scoring);
  m.set("bias", std::int64_t{method == "noaux_tc" ? 1 : 0});

  // Without norm_topk_prob the model's own code decides: Mixtral and gpt-oss normalise the top-k
  // (gpt-oss by a softmax over the selected logits), DeepSeek-V3's config class defaults to true,
  // Llama 4's top-1 sigmoid does not; transformers defaults the rest (Qwen MoE, DeepSeek-V2) to false.
  int renorm = c.flag({"norm_topk_prob", "moe_renormalize"}, "renormalize the top-k weights");
  if (renorm < 0) renorm = c.model_type_is({"mixtral", "gpt_oss", "deepseek_v3", "kimi_k2"}) ? 1 : 0;
  m.set("renormalize", std::int64_t{renorm});
  const double rsf = c.number({"routed_scaling_factor"}, "routed scaling factor", 1.0);
  // Models scale by a few units (DeepSeek-V3: 2.5); a huge factor overflows every weight to inf.
  if (!(rsf <= kMaxRsf))
    throw Error("Hugging Face config '" + path + "': routed_scaling_factor " + fmt_number(rsf) + " is above " +
                fmt_number(kMaxRsf) + " (models use a few units): fix the file");
  m.set("rsf", rsf);

  const std::int64_t zero = 0;
  std::int64_t shared = c.integer({"n_shared_experts", "num_shared_experts"}, "number of shared experts", &zero);
  std::string warning;  // said only once the file is known to load: an error comes alone
  if (!c.find({"n_shared_experts", "num_shared_experts"})) {
    if (llama4) shared = 1;  // Llama 4's shared expert has the routed experts' size
    const std::int64_t sized = c.integer({"shared_expert_intermediate_size"}, "shared expert size", &zero);
    if (sized > 0)
      warning = "moebench: warning: Hugging Face config '" + path + "': its gated shared expert "
                "(shared_expert_intermediate_size = " + std::to_string(sized) + ") has no fused form in moebench; it "
                "is left out (shared = 0) and only the routed experts are benchmarked\n";
  }
  m.set("shared", shared);

  std::string dt = c.word({"torch_dtype", "dtype"});
  dt = normalise_dtype(dt);
  if (dt != "bf16" && dt != "f16" && dt != "f32") dt = "bf16";
  m.set("dtype", dt);

  // gpt-oss's experts (its modeling code): gate and up interleaved column by column in one
  // biased projection, the clamped SwiGLU with alpha 1.702 and the config's swiglu_limit, a
  // biased down projection.
  if (c.model_type_is({"gpt_oss"})) {
    const double limit = c.number({"swiglu_limit"}, "SwiGLU clamp", 7.0);
    if (!(limit > 0) || !std::isfinite(limit))
      throw Error("Hugging Face config '" + path + "': swiglu_limit " + fmt_number(limit) +
                  " is not a positive number (gpt-oss uses 7.0): fix the file");
    m.set("activation", std::string("swiglu_oai")).set("alpha", 1.702).set("limit", limit);
    m.set("w13_layout", std::string("interleaved")).set("w13_block", std::int64_t{1});
    m.set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
  }
  check_model(m, "Hugging Face config '" + path + "'");
  if (const json* q = c.find({"quantization_config"})) read_quantization(*q, "Hugging Face config '" + path + "'", m);
  std::cerr << warning;
  return m;
}

}  // namespace moe::tuner
