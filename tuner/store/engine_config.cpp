#include "tuner/store/engine_config.hpp"

#include <filesystem>
#include <map>
#include <set>

#include "moe/error.hpp"
#include "tuner/store/results.hpp"

namespace moe::tuner {

namespace fs = std::filesystem;

namespace {

const char* const kConfigKeys[] = {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"};

std::int64_t int_field(const json& o, const char* k, std::int64_t fallback) {
  if (!o.contains(k)) return fallback;
  const json& v = o[k];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) return std::stoll(v.get<std::string>());
  return fallback;
}

struct FileKey {
  std::string name;  // the file's name
  std::string shape;  // what else the problem says (hidden, topk, ...), which the name leaves out
};

// The name both engines give the file (SGLang's block_shape keeps Python's list spacing; vLLM's drops it).
std::string base_name(const json& problem, const std::string& device_name, peers::Engine engine) {
  const std::int64_t experts = int_field(problem, "experts", 0) + int_field(problem, "shared", 0);
  const std::int64_t begin = int_field(problem, "expert_begin", 0), end = int_field(problem, "expert_end", -1);
  const std::int64_t local = (end < 0 ? experts : end) - begin;
  std::string name = "E=" + std::to_string(local) + ",N=" + std::to_string(int_field(problem, "intermediate", 0)) +
                     ",device_name=" + device_name;
  // Block-scaled fp8 is the engines' dtype fp8_w8a8 with block_shape [128, 128].
  if (problem.value("dtype", std::string()) == "fp8")
    name += engine == peers::Engine::vllm ? ",dtype=fp8_w8a8,block_shape=[128,128]" : ",dtype=fp8_w8a8,block_shape=[128, 128]";
  return name;
}

std::string shape_of(const json& problem) {
  std::string s;
  for (const char* k : {"hidden", "topk", "shared", "dtype", "align", "routed_weight"})
    if (problem.contains(k)) s += std::string(k) + "=" + problem[k].dump() + " ";
  return s;
}

}  // namespace

std::string engine_device_name(const std::string& device, peers::Engine engine) {
  if (device.rfind("cpu", 0) == 0) return "cpu";
  std::string n = device;
  for (char& c : n)
    if (c == ' ') c = '_';
  // vLLM names every H200 variant NVIDIA_H200; SGLang takes the device's name as it is.
  if (engine == peers::Engine::sglang) return n;
  std::string part;
  for (std::size_t i = 0; i <= n.size(); ++i) {
    if (i == n.size() || n[i] == '_') {
      if (part == "H200") return "NVIDIA_H200";
      part.clear();
    } else {
      part += n[i];
    }
  }
  return n;
}

std::vector<std::string> write_engine_configs(const json& results, peers::Engine engine, const std::string& dir) {
  const json& meta = results.value("meta", json::object());
  const std::string device = engine_device_name(meta.value("device", std::string("unknown")), engine);
  std::string triton = "unknown";
  if (meta.contains("engine_info") && meta["engine_info"].is_object())
    triton = meta["engine_info"].value("triton", std::string("unknown"));
  std::map<int, json> problem_of;  // point index -> problem
  for (const json& r : results.value("records", json::array()))
    if (r.contains("problem")) problem_of[r.value("point_index", -1)] = r["problem"];
  // file -> stage -> tokens -> config
  std::map<std::string, std::map<std::string, std::map<std::int64_t, json>>> files;
  std::map<std::string, std::string> shape_seen;
  for (const json& p : results.value("points", json::array())) {
    // A layer point's config is the one the engine uses for both GEMMs: its file is up's.
    const std::string kernel = p.value("kernel", "");
    if ((kernel != "gmm" && kernel != "moe-layer") || !p.contains("chosen")) continue;
    const auto it = problem_of.find(p.value("point_index", -1));
    if (it == problem_of.end()) continue;
    const json& problem = it->second;
    const std::string stage = problem.value("stage", std::string("up"));
    const std::string name = base_name(problem, device, engine);
    const std::string shape = shape_of(problem);
    const std::string key = name + "|" + stage;
    if (auto s = shape_seen.find(key); s != shape_seen.end() && s->second != shape)
      throw Error("--engine-config: the results hold two " + stage + " problems that share the engine's file " + name +
                  ".json (" + s->second + "vs " + shape + "): the file name holds only E and N, so give each model shape "
                  "its own --engine-config folder");
    shape_seen[key] = shape;
    const json& chosen = p["chosen"].value("config", json::object());
    json entry;
    for (const char* k : kConfigKeys) entry[k] = int_field(chosen, k, 0);
    files[name][stage][p.value("tokens", std::int64_t{0})] = entry;
  }
  std::vector<std::string> written;
  std::error_code ec;
  for (auto& [name, stages] : files) {
    std::vector<std::pair<std::string, const std::map<std::int64_t, json>*>> out;
    if (engine == peers::Engine::vllm) {
      // One file for both GEMMs: up's winners (the larger GEMM), down's where only down ran.
      const auto up = stages.find("up");
      out.push_back({name + ".json", up != stages.end() ? &up->second : &stages.begin()->second});
    } else {
      for (auto& [stage, entries] : stages) out.push_back({name + (stage == "down" ? "_down" : "") + ".json", &entries});
    }
    fs::path folder = dir;
    if (engine == peers::Engine::sglang) {
      std::string v = triton;
      for (char& c : v)
        if (c == '.') c = '_';
      folder = folder / "configs" / ("triton_" + v);
    }
    fs::create_directories(folder, ec);
    if (ec) throw Error("--engine-config: cannot create " + folder.string() + ": " + ec.message());
    for (auto& [file, entries] : out) {
      nlohmann::ordered_json doc = nlohmann::ordered_json::object();
      // SGLang's loader reads every key as a token count, so only vLLM's file names the Triton version.
      if (engine == peers::Engine::vllm) doc["triton_version"] = triton;
      for (auto& [tokens, entry] : *entries) {
        nlohmann::ordered_json e = nlohmann::ordered_json::object();
        for (const char* k : kConfigKeys) e[k] = entry[k];
        doc[std::to_string(tokens)] = e;
      }
      const std::string path = (folder / file).string();
      write_text_atomic(path, doc.dump(4) + "\n");
      written.push_back(path);
    }
  }
  return written;
}

}  // namespace moe::tuner
