#include "tuner/measure/save_case.hpp"

#include <filesystem>
#include <fstream>

#include "io/npy.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/base/shell_words.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

void save_tensors(const std::string& dir, const Prepared& p, const TensorMap& outputs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the folder " + dir + " to save the tensors in (" + ec.message() + "): give a writable one");
  for (auto& [name, tensor] : p.inputs) write_npy((fs::path(dir) / (name + ".npy")).string(), tensor);
  for (auto& [name, tensor] : outputs) write_npy((fs::path(dir) / (name + ".npy")).string(), tensor);
  for (auto& [name, tensor] : p.reference) write_npy((fs::path(dir) / (name + ".ref.npy")).string(), tensor);
}

std::string run_command(const Prepared& p, Backend b, const Params& config, int device, const std::string& dir) {
  std::vector<std::string> args{executable_path(), "run", p.family->name};
  for (auto& [k, v] : p.problem.values()) args.insert(args.end(), {"--set", k + "=" + value_str(v)});
  std::string cfg;
  for (auto& [k, v] : config.values()) cfg += (cfg.empty() ? "" : ",") + k + "=" + value_str(v);
  if (!cfg.empty()) args.insert(args.end(), {"--config", cfg});
  args.insert(args.end(), {"--backend", std::string(backend_name(b))});
  if (b == Backend::cuda) args.insert(args.end(), {"--device", std::to_string(device)});
  for (auto& [name, tensor] : p.inputs)
    args.insert(args.end(), {"--input", name + "=" + (fs::path(dir) / (name + ".npy")).string()});
  return shell_join(args);
}

std::string save_invalid_case(const std::string& root, const Prepared& p, const TensorMap& outputs, Backend b,
                              const Params& config, int device) {
  const fs::path dir = fs::path(root) / p.family->name / runtime::slugify(p.problem.str()) / runtime::slugify(config.str());
  save_tensors(dir.string(), p, outputs);
  const std::string cmd = run_command(p, b, config, device, fs::absolute(dir).string());
  std::ofstream out(dir / "repro.sh");
  out << "#!/bin/sh\n# Runs the candidate the validation gate found invalid, on the inputs saved here.\n" << cmd << "\n";
  if (!out) throw Error("--save-invalid: cannot write " + (dir / "repro.sh").string());
  return dir.string();
}

}  // namespace moe::tuner
