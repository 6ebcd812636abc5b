#include <fmt/format.h>

#include <memory>
#include <string>

#include "app/commands.hpp"
#include "moe/family.hpp"
#include "peers/engine.hpp"
#include "tuner/problem/models.hpp"

namespace moe::app {

static std::string spec_line(const ParamSpec& s) {
  std::string allowed;
  if (!s.choices.empty()) {
    for (std::size_t i = 0; i < s.choices.size(); ++i) allowed += (i ? "|" : "") + s.choices[i];
  } else if (s.kind == ParamKind::Bool) {
    allowed = "0|1";
  } else if (s.kind == ParamKind::Int && (s.min != INT64_MIN || s.max != INT64_MAX)) {
    allowed = fmt::format("{}..{}", s.min, s.max);
  } else if (s.kind == ParamKind::Float && s.above > -HUGE_VAL) {
    allowed = "> " + value_str(s.above);
  }
  return fmt::format("    {:<14} {:<10} {:<22} {}", s.name, value_str(s.default_value), allowed, s.help);
}

void add_list_command(CLI::App& root) {
  auto* cmd = root.add_subcommand("list", "kernel families with their problem and config parameters; model presets");
  auto only = std::make_shared<std::string>();
  cmd->add_option("family", *only, "show this family only (and no presets)");
  cmd->callback([only] {
    if (!only->empty()) family(*only);  // an unknown name: the error lists the known ones
    for (const FamilyDesc* f : families()) {
      if (!only->empty() && f->name != *only) continue;
      fmt::print("{}: {}\n  problem parameters (name, default, allowed, meaning):\n", f->name, f->summary);
      for (auto& s : f->problem_params) fmt::print("{}\n", spec_line(s));
      for (auto& b : f->backends) {
        fmt::print("  {} config parameters:\n", backend_name(b.backend));
        for (auto& s : b.config_params) fmt::print("{}\n", spec_line(s));
      }
      for (const std::string& n : peers::engine_families()) {
        if (n != f->name) continue;
        fmt::print("  vllm | sglang config parameters (the engine's own Triton fused_moe kernel, --backend vllm|sglang):\n");
        for (auto& s : peers::engine_family(peers::Engine::vllm, n).backends.front().config_params)
          fmt::print("{}\n", spec_line(s));
      }
      fmt::print("\n");
    }
    if (!only->empty()) return;
    fmt::print("axes: every problem parameter (flag or --set NAME=...), --model, --tp and --ep take a list; an integer\n"
               "  one a range of powers of two too (A-B, as --tokens 1-4096). `sweep` runs every combination, one\n"
               "  problem each, and skips (with the reason) a combination no family takes; --zip A,B pairs two lists\n"
               "  instead of crossing them; --dry-run shows the plan. For example:\n"
               "    moebench sweep router --experts 64,128,256,384 --topk 4,8 --tokens 1,16 --dry-run\n\n");
    fmt::print("model presets ({}):\n", tuner::models_dir());
    for (auto& name : tuner::model_names()) {
      const Params m = tuner::load_model(name);
      fmt::print("  {:<18} {}\n", name, m.str());
    }
  });
}

}  // namespace moe::app
