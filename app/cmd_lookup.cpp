#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/flag_checks.hpp"
#include "app/problem_cli.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/lookup.hpp"
#include "runtime/params_json.hpp"
#include "tuner/problem/problem.hpp"

namespace moe::app {

namespace {

// --device: a CUDA ordinal, or a device name to read another machine's tables.
DeviceInfo lookup_device(Backend b, const std::string& device, int threads) {
  if (b == Backend::cpu) return cpu_device_info(threads);
  const bool ordinal = !device.empty() && std::all_of(device.begin(), device.end(), [](unsigned char c) { return std::isdigit(c); });
  if (device.empty() || ordinal) {
    const long o = device.empty() ? 0 : std::min<long>(std::strtol(device.c_str(), nullptr, 10), INT_MAX);
    if (cuda_device_count() == 0)
      throw Error("no CUDA device is visible: give --device NAME (e.g. \"NVIDIA H100 80GB HBM3\") to read that device's tables, or --backend cpu");
    require_cuda_device(static_cast<int>(o));
    return cuda_device_info(static_cast<int>(o));
  }
  DeviceInfo d;
  d.backend = Backend::cuda;
  d.name = device;
  return d;
}

}  // namespace

void add_lookup_command(CLI::App& root) {
  struct Args {
    std::string family, backend, device, tables;
    bool json = false;
    int threads = 0;
    ProblemArgs problem;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = root.add_subcommand("lookup", "which config runtime dispatch picks for a problem, from which table, and why");
  cmd->add_option("FAMILY", a->family, "kernel family")->required();
  add_problem_options(*cmd, a->problem, "");
  cmd->add_option("--backend", a->backend, "cpu | cuda (default: cuda when a GPU is visible)");
  cmd->add_option("--device", a->device, "CUDA ordinal, or a device name to read its tables without it");
  cmd->add_option("--tables", a->tables, "table directory (default: $MOEBENCH_CONFIG_DIR, else the shipped configs/)");
  allow_only(cmd->add_option("--threads", a->threads, "cpu backend threads (0: all)"), Allowed::thread_count,
             "0: all cores");
  cmd->add_flag("--json", a->json, "one JSON object per token count");
  cmd->footer("Exit status: 0 answered (a missing table is a warning); 2 usage or input error; 3 internal error (a "
              "bug: please report it). See docs/exit-codes.md.");
  cmd->callback([cmd, a] {
    const FamilyDesc& f = family(a->family);
    if (a->problem.tokens.empty()) throw Error("lookup needs --tokens N (or a list: 1,16,256)");
    const Backend b = a->backend.empty() ? (cuda_device_count() > 0 ? Backend::cuda : Backend::cpu) : parse_backend(a->backend);
    if (b == Backend::cpu) refuse_for_cpu(*cmd, "--device", "names the GPU whose tables to read");
    const DeviceInfo dev = lookup_device(b, a->device, a->threads);
    // A missing folder is a missing table (the warning says what would make it); a file is a mistake.
    std::error_code ec;
    if (!a->tables.empty() && std::filesystem::exists(a->tables, ec) && !std::filesystem::is_directory(a->tables, ec))
      throw Error("--tables " + a->tables + " is not a folder: give the folder of tables (what `moebench sweep --tables` wrote)");
    const std::vector<std::string> dirs = a->tables.empty() ? runtime::default_table_dirs() : std::vector<std::string>{a->tables};
    Params problem = problem_params(f, a->problem, true);
    for (std::int64_t t : tuner::parse_token_list(a->problem.tokens)) {
      problem.set("tokens", t);
      const runtime::Choice c = runtime::choose_config(f, b, problem, dev, dirs, true);
      if (a->json) {
        nlohmann::json j = {{"family", f.name},
                            {"backend", std::string(backend_name(b))},
                            {"device", runtime::device_slug(dev)},
                            {"tokens", t},
                            {"match", std::string(runtime::match_name(c.how))},
                            {"table", c.table},
                            {"config", runtime::params_to_json(c.config)},
                            {"reason", c.reason}};
        if (c.how != runtime::Match::fallback) {
          j["entry_tokens"] = c.key;
          j["median_us"] = c.entry.median_us;
          if (c.entry.has_runner_up)
            j["runner_up"] = {{"config", runtime::params_to_json(c.entry.runner_up)}, {"median_us", c.entry.runner_up_median_us}};
        }
        if (!c.warning.empty()) j["warning"] = c.warning;
        fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        continue;
      }
      fmt::print("{} tokens={} ({}, {}): {}\n", f.name, t, backend_name(b), runtime::device_slug(dev), runtime::match_name(c.how));
      fmt::print("  table:  {}{}\n", c.table, c.how == runtime::Match::fallback ? " (not used)" : "");
      if (c.how != runtime::Match::fallback) {
        fmt::print("  entry:  {} tokens, median {:.3f} us{}\n", c.key, c.entry.median_us,
                   c.entry.kept_default ? " (default kept: the winner was within noise)" : "");
        if (c.entry.has_runner_up)
          fmt::print("  runner-up: {} ({:.3f} us)\n", c.entry.runner_up.str(), c.entry.runner_up_median_us);
      }
      fmt::print("  config: {}\n  why:    {}\n", c.config.str(), c.reason);
      if (!c.warning.empty()) fmt::print("  warning: {}\n", c.warning);
    }
  });
}

}  // namespace moe::app
