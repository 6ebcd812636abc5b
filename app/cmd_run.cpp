#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/commands.hpp"
#include "app/emu_text.hpp"
#include "app/flag_checks.hpp"
#include "app/problem_cli.hpp"
#include "io/npy.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/save_case.hpp"
#include "common/emu_backend.hpp"
#include "tuner/measure/emu_time.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/timer_cuda.hpp"
#include "tuner/problem/problem.hpp"
#include "tuner/store/tables_dir.hpp"
#include "layer/front.hpp"
#include "layer/stage_configs.hpp"
#include "runtime/lookup.hpp"
#include "runtime/table.hpp"

namespace moe::app {

namespace {

struct RunArgs {
  std::string family, backend = "auto", config, dist = "uniform", save, tables;
  std::vector<std::string> inputs;
  std::uint64_t seed = 1;
  int device = 0, threads = 0, repeat = 5, graph_calls = tuner::kDefaultGraphCalls;
  double zipf_s = 1.2;
};

Backend pick_backend(const std::string& b) {
  if (b == "auto") return cuda_device_count() > 0 ? Backend::cuda : Backend::cpu;
  return parse_backend(b);
}

TensorMap load_inputs(const FamilyDesc& f, const Params& problem, const std::vector<std::string>& args) {
  TensorMap given;
  std::vector<std::string> names;
  for (auto& s : f.input_specs(problem)) names.push_back(s.name);
  for (auto& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      throw Error("--input '" + a + "' is not NAME=FILE.npy");
    const std::string name = a.substr(0, eq);
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw Error("--input " + name + ": family '" + f.name + "' has no input '" + name + "' (it takes: " +
                  fmt::format("{}", fmt::join(names, ", ")) + ")");
    // A second file for one input would silently replace the first: say which one is meant.
    if (given.count(name)) throw Error("--input " + name + " is given twice: give each input once");
    given[name] = read_npy(a.substr(eq + 1));
  }
  return given;
}

// --tables: the config runtime dispatch would pick from DIR, in place of the family default
// (a config given with --config wins, parameter by parameter).
Params table_config(const FamilyDesc& f, Backend b, const Params& problem, const DeviceInfo& dev, const RunArgs& ra,
                    std::string& source) {
  const runtime::Choice c = runtime::choose_config(f, b, problem, dev, {ra.tables}, true);
  source = c.how == runtime::Match::fallback ? "default: " + c.reason
                                              : std::string(runtime::match_name(c.how)) + " entry " + std::to_string(c.key) +
                                                    " of " + c.table;
  return c.config;
}

// The layer's stages as they ran: each stage's config and where it came from, so a user sees
// whether the tables were found. With --tables, "auto" stages are pinned to DIR's choices.
std::vector<StageChoice> resolve_stages(Backend b, const Params& problem, Params& config, const DeviceInfo& dev,
                                        const RunArgs& ra) {
  const auto dirs = ra.tables.empty() ? runtime::default_table_dirs() : std::vector<std::string>{ra.tables};
  const ResolvedLayer r = resolve_layer(b, problem, config, dev, dirs, false);
  for (std::size_t i = 0; i < r.stages.size(); ++i)
    if (config.s(r.stages[i].name) == "auto") config.set(r.stages[i].name, stage_config_text(r.choices[i].config));
  return r.choices;
}

std::string median_text(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return fmt::format("median {:.2f} us, min {:.2f} us", t[t.size() / 2], t.front());
}

// The layer as engines run it: the config (and the same stages with the other pdl) alone and in
// a CUDA graph of --graph-calls calls, per call; on the cpu backend, why there is no graph.
void print_layer_timings(const tuner::Prepared& p, Backend backend, const Params& config, const DeviceInfo& dev,
                         const RunArgs& ra) {
  if (const std::string why = tuner::graph_timing_unavailable(backend); !why.empty()) {
    if (backend == Backend::cpu) fmt::print("graph    not applicable: {}\n", why);
    return;
  }
  const std::int64_t pdl = config.i("pdl");
  Params other = config;
  other.set("pdl", 1 - pdl);
  const Params* const both[] = {&config, &other};
  for (const Params* c : both) {
    const std::string tag = fmt::format("pdl={}", c->i("pdl"));
    if (c == &other) {
      const tuner::Outcome o = tuner::run_backend(p, backend, *c, dev, ra.repeat);
      fmt::print("alone    {}: {} over {} runs{}\n", tag, median_text(o.times_us), o.times_us.size(),
                 o.validation.ok ? "" : " (its output does not match the reference: " + o.validation.summary() + ")");
    }
    const tuner::GraphTimes g = tuner::time_in_graph(p, *c, dev, ra.graph_calls, ra.repeat);
    if (!g.not_timed.empty()) fmt::print("graph    {}: not capturable: {}\n", tag, g.not_timed);
    else
      fmt::print("graph    {}: {} per call over {} replays of {} calls captured in one CUDA graph\n", tag,
                 median_text(g.per_call_us), g.per_call_us.size(), ra.graph_calls);
  }
}

void run(const CLI::App& cmd, const ProblemArgs& pa, const RunArgs& ra) {
  const FamilyDesc& f = family(ra.family);
  // Only the layer is timed in a graph: the flag would do nothing for another family.
  if (cmd.count("--graph-calls") > 0 && f.name != "moe-layer")
    throw Error("--graph-calls times moe-layer in a CUDA graph: leave it out for " + f.name);
  const Backend backend = pick_backend(ra.backend);
  if (backend == Backend::cuda) require_cuda_device(ra.device);
  else refuse_for_cpu(cmd, "--device", "names the GPU to run on", backend);
  const DeviceInfo dev = backend == Backend::cuda  ? cuda_device_info(ra.device)
                         : backend == Backend::emu ? emu_device_info()
                                                   : cpu_device_info(ra.threads);
  if (backend == Backend::emu && !f.backend(backend)) throw Error(no_emu_reason(f));
  f.need_backend(backend);

  Params problem = problem_params(f, pa, true);
  const auto tokens = tuner::parse_token_list(pa.tokens);
  if (tokens.size() != 1) throw Error("run takes one token count; use `moebench sweep` for several");
  problem.set("tokens", tokens[0]);
  if (backend == Backend::emu) tuner::check_emu_time(f, complete(f.problem_params, problem, "family '" + f.name + "'"));
  // Before making the inputs and running, which may take long, not after it.
  if (!ra.save.empty()) tuner::check_writable_dir(ra.save, "--save", "give a folder that can be created and written");

  std::unique_ptr<Tensor> replay;
  InputOptions opt;
  opt.seed = ra.seed;
  opt.zipf_s = ra.zipf_s;
  opt.dist = ra.dist;
  if (ra.dist.size() > 4 && ra.dist.substr(ra.dist.size() - 4) == ".npy") {
    replay = std::make_unique<Tensor>(read_npy(ra.dist));
    opt.dist = "replay";
    opt.replay = replay.get();
  }
  const tuner::Prepared p = tuner::prepare(f, problem, opt, load_inputs(f, problem, ra.inputs));
  const BackendImpl& impl = f.need_backend(backend);
  const Params given = parse_assignments(impl.config_params, ra.config, f.name + " " + std::string(backend_name(backend)) + " config");
  Params config = tuner::complete_config(f, backend, p.problem, given, dev);
  std::string source = ra.config.empty() ? "default" : "given";
  std::vector<StageChoice> stages;
  if (f.name == "moe-layer") {
    stages = resolve_stages(backend, p.problem, config, dev, ra);
    source = "stages below";
  } else if (!ra.tables.empty()) {
    config = tuner::complete_config(f, backend, p.problem, table_config(f, backend, p.problem, dev, ra, source), dev);
    for (auto& [k, v] : given.values()) config.set(k, v);
    if (!ra.config.empty()) source += ", with --config over it";
  }

  const tuner::Outcome o = tuner::run_backend(p, backend, config, dev, ra.repeat);
  fmt::print("family   {}\nproblem  {}\nbackend  {} ({})\n", f.name, p.problem.str(), backend_name(backend), dev.name);
  if (stages.empty()) fmt::print("config   {} ({})\n", config.str(), source);
  const bool decode = !stages.empty() && decode_path(config);
  if (!stages.empty())
    fmt::print("path     {}\n", decode ? fmt::format("decode: one front kernel in place of router and dispatch ({} CTAs)",
                                                    front_ctas(p.problem, config, dev.sm_count))
                                       : std::string("stages: every stage its own kernels"));
  for (std::size_t i = decode ? 2 : 0; i < stages.size(); ++i) {
    const StageChoice& c = stages[i];
    const std::string from = c.how == "explicit" || c.how == "family default" ? "given"
                             : c.how == "default" ? "default: " + (c.warning.empty() ? "no table" : c.warning)
                                                  : c.how + " entry " + std::to_string(c.key) + " of " + c.table;
    fmt::print("stage    {}: {} ({})\n", layer_stages(p.problem)[i].name, c.config.str(), from);
  }
  if (o.times_us.empty()) {
    fmt::print("time     not measured: the emu backend validates the cuda kernel sources, it does not time them\n");
    // What one call launches on a GPU (the emulated run mirrors the cuda plan), in order.
    if (!o.kernels.empty()) fmt::print("kernels  {} per call: {}\n", o.kernels.size(), fmt::join(o.kernels, ", "));
  } else {
    std::vector<double> t = o.times_us;
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    fmt::print("time     median {:.2f} us, min {:.2f} us over {} runs", med, t.front(), t.size());
    if (p.cost.bytes > 0) fmt::print(", {:.1f} GB/s", p.cost.bytes / med / 1e3);
    if (p.cost.flops > 0) fmt::print(", {:.3f} TFLOP/s", p.cost.flops / med / 1e6);
    fmt::print("\n");
  }
  if (f.name == "moe-layer" && !o.times_us.empty()) print_layer_timings(p, backend, config, dev, ra);
  if (!o.not_emulated.empty()) fmt::print("emulated not emulated: {}\n", o.not_emulated);
  fmt::print("validate {}\n", o.validation.summary());

  if (!ra.save.empty()) {
    tuner::save_tensors(ra.save, p, o.outputs);
    fmt::print("saved    inputs, outputs and reference outputs (*.ref.npy) as .npy in {}\n", ra.save);
  }
  if (!o.validation.ok) {
    std::fflush(stdout);
    fmt::print(stderr, "moebench: error: {} output does not match the reference (see the validate line above)\n", f.name);
    throw CLI::RuntimeError(1);  // it ran; the check failed
  }
}

}  // namespace

void add_run_command(CLI::App& root) {
  auto* cmd = root.add_subcommand("run", "run one problem with one config, validate it against the reference, time it");
  auto pa = std::make_shared<ProblemArgs>();
  auto ra = std::make_shared<RunArgs>();
  std::string names;
  for (auto* f : families()) names += (names.empty() ? "" : "|") + f->name;
  cmd->add_option("family", ra->family, "kernel family: " + names)->required();
  add_problem_options(*cmd, *pa, "64");
  cmd->get_option("--tokens")->description("token count: one number (`moebench sweep` takes lists)");
  cmd->add_option("--backend", ra->backend, "cpu | cuda | emu | auto (cuda when a GPU is visible). " + emu_help())
      ->default_str("auto");
  allow_only(cmd->add_option("--device", ra->device, "CUDA device ordinal")->default_str("0"), Allowed::non_negative_int);
  allow_only(cmd->add_option("--threads", ra->threads, "cpu backend threads (0: all cores)")->default_str("0"),
             Allowed::thread_count, "0: all cores");
  cmd->add_option("--config", ra->config, "config as NAME=VALUE,... (unset ones: the family default)");
  cmd->add_option("--input", ra->inputs, "NAME=FILE.npy: use this input instead of a generated one (repeatable)");
  cmd->add_option("--tables", ra->tables,
                  "take the config from the tables in DIR, as runtime dispatch would (moe-layer: every auto stage); "
                  "default: the family default, and for moe-layer's stages $MOEBENCH_CONFIG_DIR, else ./configs and "
                  "the shipped tables");
  cmd->add_option("--save", ra->save, "write every input, output and reference output as NAME.npy in DIR");
  cmd->add_option("--dist", ra->dist, "routing: uniform | zipf | FILE.npy (captured logits [N,E] or ids [N,k])")->default_str("uniform");
  allow_only(cmd->add_option("--zipf-s", ra->zipf_s, "zipf exponent for --dist zipf (0: uniform)")->default_str("1.2"),
             Allowed::non_negative_number, "0: uniform; larger: more skewed");
  allow_only(cmd->add_option("--seed", ra->seed, "random seed for generated inputs")->default_str("1"), Allowed::seed);
  allow_only(cmd->add_option("--repeat", ra->repeat, "timed runs (the first is validated)")->default_str("5"),
             Allowed::positive_int);
  allow_only(cmd->add_option("--graph-calls", ra->graph_calls,
                              "moe-layer: calls captured in one CUDA graph for its graph timing, beside the time alone, "
                              "each with pdl=1 and pdl=0 (cuda backend)")
                 ->default_str(std::to_string(tuner::kDefaultGraphCalls)),
             Allowed::positive_int);
  cmd->footer("Exit status: 0 the output matched the reference; 1 it did not (the validate line says which tensor); "
              "2 usage or input error; 3 internal error (a bug: please report it). See docs/exit-codes.md.");
  cmd->callback([cmd, pa, ra] { run(*cmd, *pa, *ra); });
}

}  // namespace moe::app
