#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <cstdlib>
#include <filesystem>

#include "app/commands.hpp"
#include "app/command_line.hpp"
#include "app/emu_text.hpp"
#include "app/flag_checks.hpp"
#include "app/problem_cli.hpp"
#include "common/emu_backend.hpp"
#include "io/npy.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/search/layer_units.hpp"
#include "tuner/search/plan_text.hpp"
#include "tuner/problem/problem.hpp"
#include "tuner/store/report.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/store/tables_dir.hpp"
#include "peers/engine.hpp"
#include "tuner/run/engine_worker.hpp"
#include "tuner/store/engine_config.hpp"

namespace moe::app {

namespace {

struct SweepArgs {
  std::string what;
  ProblemArgs problem;
  std::string backend, space = "default", strategy = "halving", budget, devices = "all", shard = "0/1";
  std::string out, tables, dist = "uniform", timer = "cold", progress, save_invalid, engine_config;
  std::string min_time = "1ms", max_time = "1s", max_noise = "1%", watchdog = "20s";
  double zipf_s = 1.2;
  int min_samples = 10, threads = 0, graph_calls = tuner::kDefaultGraphCalls;
  std::uint64_t seed = 0;
  bool resume = false, no_retry = false, quiet = false, json = false, no_cupti = false, dry_run = false;
};

// What `sweep <what>` covers: one family (moe-layer is one too: the whole pipeline as a
// unit), or all of them in pipeline order.
std::vector<const FamilyDesc*> sweep_targets(const std::string& what, Backend b, bool& strict) {
  strict = false;
  if (what != "all") {
    strict = true;
    return {&family(what)};
  }
  std::vector<const FamilyDesc*> out;
  std::string missing;
  for (const FamilyDesc* f : families()) {
    if (f->backend(b)) out.push_back(f);
    else missing += (missing.empty() ? "" : ", ") + f->name;
  }
  if (!missing.empty())
    fmt::print(stderr, "moebench: warning: {} {} no {} backend in this build: not swept\n", missing,
               missing.find(',') == std::string::npos ? "has" : "have", backend_name(b));
  if (out.empty()) throw Error(std::string("no kernel family has a ") + std::string(backend_name(b)) + " backend in this build");
  return out;
}

std::vector<int> parse_devices(const std::string& text) {
  const int n = cuda_device_count();
  if (n == 0) require_cuda_device(0);  // says why there is none
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0) throw Error("--devices '" + text + "': use all or a list of GPU ordinals like 0,1,3");
    if (v >= n)
      throw Error("--devices '" + text + "': there is no GPU " + item + ": " + std::to_string(n) +
                  " visible, ordinals 0.." + std::to_string(n - 1) + " (see `moebench devices`)");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::string default_out(const DeviceInfo& dev) {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return "sweeps/" + runtime::device_slug(dev) + "-" + buf;
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

// Triton's interpreter does not compute tl.dot of bf16 operands correctly (Triton 3.9: results off
// by orders of magnitude), so a bf16 problem under it would fail every candidate for the
// interpreter's sake, not the kernel's.
void refuse_interpreted_bf16(const std::vector<tuner::SweepUnit>& units, const std::string& engine) {
  for (const tuner::SweepUnit& u : units)
    if (u.skip.empty() && u.problem.has("dtype") && u.problem.s("dtype") == "bf16")
      throw Error("--backend " + engine + " without a GPU runs the engine's kernel under Triton's interpreter, which "
                  "computes tl.dot of bf16 operands wrongly: give --dtype f16 or fp8 there (bf16 needs a GPU)");
}

void run(const CLI::App& cmd, const SweepArgs& a) {
  std::optional<peers::Engine> engine;
  if (peers::is_engine_name(a.backend)) engine = peers::parse_engine(a.backend);
  // Without a GPU the engine's Triton kernel runs under Triton's interpreter, on host tensors.
  const bool interpret = engine && (cuda_device_count() == 0 || env_is("TRITON_INTERPRET", "1"));
  const Backend backend = engine ? (interpret ? Backend::cpu : Backend::cuda)
                          : a.backend.empty() ? (cuda_device_count() > 0 ? Backend::cuda : Backend::cpu)
                                              : parse_backend(a.backend);
  if (!a.engine_config.empty() && !engine)
    throw Error("--engine-config writes an engine's own fused_moe config file: use it with --backend vllm or --backend sglang");
  if (engine && !a.tables.empty() && a.tables != "none")
    throw Error("--tables " + a.tables + ": with --backend " + a.backend + " the configs are the engine's; --engine-config DIR "
                "writes the engine's file and moebench's table of the same results (under DIR/moebench-tables)");
  // Only the layer is timed in a graph: the flag would do nothing for a sweep without it.
  if (cmd.count("--graph-calls") > 0 && a.what != "moe-layer" && a.what != "all")
    throw Error("--graph-calls times moe-layer in a CUDA graph: sweep moe-layer or all, or leave it out for " + a.what);
  tuner::SweepOptions o;
  o.backend = backend;
  if (engine) o.engine = a.backend;
  if (backend == Backend::cuda) o.devices = parse_devices(a.devices);
  else refuse_for_cpu(cmd, "--devices", "names the GPUs to sweep on", backend);
  if (backend == Backend::emu && a.what != "all" && !family(a.what).backend(backend)) throw Error(no_emu_reason(family(a.what)));
  o.axes = multi_axes(a.problem);
  if (engine) {
    // The engine's layer is one kernel config (the engine's) over the whole layer: no stage tables first.
    for (ProblemChoice& c : problem_choices(peers::engine_family(*engine, a.what), a.problem, true))
      o.units.push_back({&peers::engine_family(*engine, a.what), c.problem, c.axes, c.skip, {}});
  } else if (a.what == "all" || a.what == "moe-layer") {
    std::vector<std::string> warnings;
    for (ProblemChoice& c : problem_choices(family("moe-layer"), a.problem, false)) {
      if (!c.skip.empty()) {
        o.units.push_back({&family("moe-layer"), {}, c.axes, c.skip, {}});
        continue;
      }
      for (tuner::SweepUnit& u : tuner::layer_units(c.problem, c.slice, backend, warnings)) {
        u.axes = c.axes;
        o.units.push_back(std::move(u));
      }
    }
    std::sort(warnings.begin(), warnings.end());
    warnings.erase(std::unique(warnings.begin(), warnings.end()), warnings.end());
    for (auto& w : warnings) fmt::print(stderr, "moebench: warning: {}\n", w);
  } else {
    bool strict = false;
    for (const FamilyDesc* f : sweep_targets(a.what, backend, strict))
      for (ProblemChoice& c : problem_choices(*f, a.problem, strict)) o.units.push_back({f, c.problem, c.axes, c.skip, {}});
  }
  o.units = tuner::merge_repeated_units(std::move(o.units));
  o.tokens = tuner::parse_token_list(a.problem.tokens);
  o.threads = a.threads;
  o.space = a.space;
  o.strategy = tuner::parse_strategy(a.strategy);
  // emu validates every config once; there is no time to search by.
  if (backend == Backend::emu) o.strategy = tuner::Strategy::exhaustive;
  o.budget = tuner::parse_budget(a.budget);
  o.shard = tuner::parse_shard(a.shard);
  o.resume = a.resume;
  o.retry_failed = !a.no_retry;
  o.seed = a.seed;
  o.timer = tuner::parse_timer_mode(a.timer);
  o.cupti = !a.no_cupti;
  o.graph_calls = a.graph_calls;
  o.save_invalid = a.save_invalid;
  if (a.dist == "uniform" || a.dist == "zipf") o.dist = a.dist;
  else if (a.dist.size() > 4 && a.dist.substr(a.dist.size() - 4) == ".npy") {
    // Read once here, so an unusable capture is refused before sweeping, not in every point.
    const Tensor r = read_npy(a.dist);
    if (r.shape().size() != 2 || r.shape()[0] < 1)
      throw Error("--dist " + a.dist + " holds " + shape_str(r.shape()) +
                  ": replay needs captured logits [N,E] or ids [N,k] with N >= 1 rows");
    o.replay = a.dist;
  }
  else throw Error("--dist '" + a.dist + "': use uniform, zipf or a captured FILE.npy (logits [N,E] or ids [N,k])");
  o.zipf_s = a.zipf_s;
  o.rule.min_samples = a.min_samples;
  o.rule.max_noise = tuner::parse_fraction(a.max_noise, "--max-noise");
  o.rule.min_time_s = tuner::parse_duration(a.min_time, "--min-time");
  o.rule.max_time_s = tuner::parse_duration(a.max_time, "--max-time");
  if (o.rule.max_time_s <= 0) throw Error("--max-time " + a.max_time + ": must be a positive duration (e.g. 250ms, 1s)");
  o.watchdog_s = tuner::parse_duration(a.watchdog, "--watchdog");
  if (o.watchdog_s <= 0) throw Error("--watchdog " + a.watchdog + ": must be a positive duration (e.g. 20s)");
  const DeviceInfo dev = backend == Backend::cuda  ? cuda_device_info(o.devices.front())
                         : backend == Backend::emu ? emu_device_info()
                                                   : cpu_device_info(a.threads);
  // Refused in a dry run too: the plan shows only what the sweep would run.
  if (backend == Backend::emu && !a.tables.empty() && a.tables != "none")
    throw Error("--tables " + a.tables + ": the emu backend validates and does not time, so it writes no tables: leave "
                "--tables out");
  if (a.dry_run) {
    fmt::print("{}", tuner::plan_text(o.units, o.axes, o.tokens, backend, dev, o.space, o.shard));
    return;
  }
  std::vector<std::string> argv = command_argv();
  o.command = shell_join(argv);
  o.out_dir = a.out.empty() ? default_out(dev) : a.out;
  if (engine) {
    // After the dry run, which shows the plan a GPU would run (the commands the docs quote).
    if (interpret) refuse_interpreted_bf16(o.units, a.backend);
    // Checked before the engine's worker starts: a missing engine is one line, exit 2.
    const std::string loaded = tuner::check_engine(*engine, interpret);
    o.engine_info = nlohmann::json::parse(loaded, nullptr, false);
    if (o.engine_info.is_discarded()) o.engine_info = {{"kernel", loaded}};
    o.launch = tuner::engine_launch(*engine, interpret);
    if (interpret) ::setenv("TRITON_INTERPRET", "1", 1);
    if (!a.engine_config.empty()) {
      tuner::check_tables_dir(a.engine_config, "--engine-config");
      o.tables_dir = (std::filesystem::path(a.engine_config) / "moebench-tables").string();
      tuner::check_tables_dir(o.tables_dir, "--engine-config");
    }
  } else if (a.tables != "none" && backend != Backend::emu) {
    o.tables_dir = a.tables.empty() ? tuner::default_tables_dir() : a.tables;
    tuner::check_tables_dir(o.tables_dir, a.tables.empty() ? "the default --tables" : "--tables");
  }
  if (a.out.empty()) argv.insert(argv.end(), {"--out", o.out_dir});
  bool has_resume = false;
  for (auto& s : argv) has_resume = has_resume || s == "--resume";
  if (!has_resume) argv.push_back("--resume");
  // Pasted into a shell as printed: this very binary, and every argument read back as given.
  argv.front() = executable_path();
  o.resume_hint = shell_join(argv);
  // Checked even when --json or --quiet decide the mode: a typo is still a typo.
  const auto asked = a.progress.empty() ? tuner::default_progress_mode() : tuner::parse_progress_mode(a.progress);
  o.progress = a.json ? tuner::ProgressMode::json
               : a.quiet ? tuner::ProgressMode::quiet
                                    : asked;

  const tuner::SweepOutcome out = tuner::run_sweep(o);
  std::vector<std::string> engine_files;
  if (engine && !a.engine_config.empty()) engine_files = tuner::write_engine_configs(out.results, *engine, a.engine_config);
  if (o.progress == tuner::ProgressMode::json) {
    nlohmann::json done = {{"event", "done"},          {"interrupted", out.interrupted}, {"results", out.results_path},
                           {"journal", out.journal_path}, {"summary", out.summary_path},  {"tables", out.tables},
                           {"wall_s", out.wall_s},        {"timed", out.timed},           {"candidates", out.candidates}};
    if (out.interrupted) done["resume"] = o.resume_hint;
    if (engine) done["engine_configs"] = engine_files;
    fmt::print("{}\n", done.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}\n", tuner::printed_summary(out.results));
    fmt::print("results: {} ({}), journal: {}\n", out.results_path, out.csv_path, out.journal_path);
    for (auto& t : out.tables) fmt::print("table: {}\n", t);
    for (auto& f : engine_files) fmt::print("engine config: {}\n", f);
    if (engine) {
      if (interpret)
        fmt::print("times: Triton's interpreter on the cpu (timer {}): they check the search, not the kernel's speed\n",
                   tuner::kInterpreterTimer);
      if (a.engine_config.empty()) fmt::print("engine config: none written (give --engine-config DIR)\n");
    } else if (backend == Backend::emu) fmt::print("tables: none written (the emu backend validates, it does not time)\n");
    else if (o.tables_dir.empty()) fmt::print("tables: none written (--tables none)\n");
    else
      fmt::print("tables: {} written under {}{}\n", out.tables.size(), o.tables_dir,
                 a.tables.empty() ? " (the default: $MOEBENCH_CONFIG_DIR, else ./configs; choose with --tables DIR)" : "");
  }
  std::fflush(stdout);
  if (!out.interrupted && out.failed_points.empty() && !out.skipped_points.empty() &&
      out.skipped_points.size() == static_cast<std::size_t>(out.points_done)) {
    fmt::print(stderr, "moebench: error: nothing could run: every one of the {} points was skipped, e.g. {}\n",
               out.points_done, out.skipped_points.front());
    std::fflush(stderr);
    throw CLI::RuntimeError(1);
  }
  if (!out.interrupted && !out.failed_points.empty()) {
    // A row in the summary is easy to miss in CI: points that could not run fail the command.
    fmt::print(stderr, "moebench: error: {} of {} points could not run, e.g. {}\n", out.failed_points.size(),
               out.points_done, out.failed_points.front());
    std::fflush(stderr);
    throw CLI::RuntimeError(1);
  }
  if (out.interrupted) {
    fmt::print(stderr, "interrupted: resume with: {}\n", o.resume_hint);
    throw CLI::RuntimeError(130);
  }
}

}  // namespace

void add_sweep_command(CLI::App& root) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = root.add_subcommand("sweep", "tune: time every valid config per problem and token count, write results and tables");
  cmd->add_option("WHAT", a->what, "a kernel family, moe-layer, or all (every family in pipeline order)")->required();
  add_problem_options(*cmd, a->problem, "default");
  cmd->add_option("--backend", a->backend,
                  "cpu | cuda | emu | vllm | sglang (default: cuda when a GPU is visible). vllm and sglang tune the "
                  "engine's Triton fused_moe kernel (gmm: its up and down GEMMs; moe-layer: the layer the engine runs with it; without a GPU under Triton's interpreter). emu validates every config of the cuda "
                  "space for an H100 under the emulator, exhaustively, times nothing and writes no tables. " +
                      emu_help());
  cmd->add_option("--devices", a->devices, "GPUs to use, one worker each: all | 0,1,...")->default_str("all");
  allow_only(cmd->add_option("--threads", a->threads, "cpu backend threads (0: all)"), Allowed::thread_count,
             "0: all cores");
  cmd->add_option("--space", a->space, "default | full | FILE.json (a list of configs, or {family: [configs]})")
      ->default_str("default");
  cmd->add_option("--strategy", a->strategy, "exhaustive | random | halving")->default_str("halving");
  cmd->add_option("--budget", a->budget, "TIME for the whole sweep (10m, 90s; each point still times its default and two more) or N candidates per point");
  cmd->add_option("--shard", a->shard, "i/n: run the i-th of n deterministic parts (join them with `moebench merge`)")
      ->default_str("0/1");
  cmd->add_flag("--dry-run", a->dry_run, "print the expanded plan (problems x tokens x candidates, the estimated time) and run nothing");
  cmd->add_flag("--resume", a->resume,
                "continue the sweep whose journal is in --out, skipping what is done; candidates whose worker "
                "crashed or timed out are measured again, once");
  cmd->add_flag("--no-retry", a->no_retry, "with --resume: keep crashed and timed-out candidates as they are");
  cmd->add_option("--out", a->out, "directory for the journal, results.json/.csv and summary.md")
      ->default_str("sweeps/<device>-<time>");
  cmd->add_option("--tables", a->tables, "where config tables go, checked writable before sweeping (none: write none)")
      ->default_str("first dir of $MOEBENCH_CONFIG_DIR, else ./configs");
  cmd->add_option("--engine-config", a->engine_config,
                  "with --backend vllm|sglang: write the engine's own fused_moe config files here (vLLM: "
                  "E=..,N=..,device_name=...json for VLLM_TUNED_CONFIG_FOLDER; SGLang: configs/triton_X_Y_Z/... for "
                  "SGLANG_MOE_CONFIG_DIR), and moebench's table of the same results under DIR/moebench-tables");
  cmd->add_option("--dist", a->dist, "routing: uniform | zipf | FILE.npy (captured logits or ids)")->default_str("uniform");
  allow_only(cmd->add_option("--zipf-s", a->zipf_s, "zipf exponent for --dist zipf (0: uniform)")->default_str("1.2"),
             Allowed::non_negative_number, "0: uniform; larger: more skewed");
  allow_only(cmd->add_option("--seed", a->seed, "seed of every random input")->default_str("0"), Allowed::seed);
  cmd->add_option("--timer", a->timer, "cuda: cold (L2 flushed per sample, CUPTI) | hot (CUDA-graph batch)")
      ->default_str("cold");
  cmd->add_flag("--no-cupti", a->no_cupti, "cuda: time with CUDA events only");
  allow_only(cmd->add_option("--graph-calls", a->graph_calls,
                              "moe-layer: also time each layer candidate as engines run it, this many calls captured "
                              "in one CUDA graph, per call (cuda backend; cpu records say not applicable)")
                 ->default_str(std::to_string(tuner::kDefaultGraphCalls)),
             Allowed::positive_int);
  cmd->add_option("--save-invalid", a->save_invalid,
                  "write an invalid candidate's inputs, outputs and reference as .npy, with the `moebench run` "
                  "command that reproduces it, under DIR/FAMILY/PROBLEM/CONFIG");
  allow_only(cmd->add_option("--min-samples", a->min_samples, "samples before a candidate may stop")->default_str("10"),
             Allowed::positive_int);
  cmd->add_option("--max-noise", a->max_noise, "stop once the median's relative noise is below this")->default_str("1%");
  cmd->add_option("--min-time", a->min_time, "measured time before a candidate may stop")->default_str("1ms");
  cmd->add_option("--max-time", a->max_time, "time-out of one candidate's measurement")->default_str("1s");
  cmd->add_option("--watchdog", a->watchdog, "a candidate silent this long (beyond --max-time) is killed: timeout")
      ->default_str("20s");
  cmd->add_option("--progress", a->progress, "tty | plain | json | quiet (default: tty on a terminal, else plain)");
  cmd->add_flag("--quiet", a->quiet, "no progress lines (the summary is still printed)");
  cmd->add_flag("--json", a->json, "progress as JSON events on stdout, for machines");
  cmd->footer("Exit status: 0 done; 1 some points could not run (the others' results and tables are written); 2 usage "
              "or input error, found before sweeping; 3 internal error (a bug: please report it); 130 interrupted (it "
              "prints the command that resumes). See docs/exit-codes.md.");
  cmd->callback([cmd, a] { run(*cmd, *a); });
}

}  // namespace moe::app
