#include "tuner/run/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <set>
#include <thread>

#include "common/emu_backend.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/base/file_lock.hpp"
#include "tuner/run/engine_worker.hpp"
#include "tuner/run/evaluator.hpp"
#include "tuner/run/resume.hpp"
#include "tuner/base/interrupt.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/run/sweep_state.hpp"
#include "tuner/store/tables.hpp"
#include "tuner/base/units.hpp"
#include "tuner/base/version.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

namespace {

json make_meta(SweepState& s, const JournalContents& jc, double wall_s);

// The (kernel, problem key) of every table the plan may write.
std::vector<std::pair<std::string, std::string>> table_keys(const Plan& plan) {
  std::set<std::pair<std::string, std::string>> keys;
  for (const PlanPoint& p : plan.points)
    if (p.skip.empty()) keys.insert({p.family->name, runtime::problem_key(p.problem)});
  return {keys.begin(), keys.end()};
}

json axes_json(const AxisValues& v) {
  json j = json::object();
  for (auto& [n, x] : v) j[n] = x;
  return j;
}

json axes_list(const std::vector<Axis>& axes) {
  json j = json::array();
  for (auto& a : axes) j.push_back({{"name", a.name}, {"values", a.values}});
  return j;
}

// The points of units with `resolve` (the layer) are timed with the configs the other points
// chose. The first of them to start writes the other points' tables (the same writer as at
// the end, from the journal, so resumed points count) into s.stage_tables and resolves every
// dependent candidate against them, once, so every device thread runs the same configs.
void resolve_dependent_points(SweepState& s) {
  const SweepOptions& o = s.o;
  const JournalContents jc = read_journal(s.journal->path());
  json results = build_results(jc, make_meta(s, jc, s.elapsed()));
  std::set<std::string> dependent;
  for (std::size_t k = s.first_dependent; k < s.mine.size(); ++k) dependent.insert(s.plan.points[s.mine[k]].key);
  json others = json::array();
  for (auto& p : results["points"])
    if (!dependent.count(p.value("point", ""))) others.push_back(p);
  results["points"] = others;
  write_tables(results, s.stage_tables);
  std::vector<std::string> dirs = {s.stage_tables};
  for (auto& d : runtime::default_table_dirs())
    if (d != s.stage_tables) dirs.push_back(d);
  std::set<std::string> warned;
  for (std::size_t k = s.first_dependent; k < s.mine.size(); ++k) {
    PlanPoint& pt = s.plan.points[s.mine[k]];
    for (Candidate& c : pt.candidates) {
      if (!c.invalid_reason.empty()) continue;
      try {
        ResolvedConfig r = o.units[pt.unit].resolve(pt.problem, c.config, s.dev, dirs);
        for (auto& w : r.warnings)
          if (warned.insert(w).second) s.progress->warning("moebench: warning: " + pt.family->name + ": " + w);
        pt.resolved[c.key] = std::move(r);
      } catch (const Error& e) {
        c.invalid_reason = e.what();  // recorded as invalid, never run
      }
    }
  }
}

// False when the sweep is interrupted while waiting.
bool await_stage_tables(SweepState& s) {
  std::unique_lock lock(s.phase_mu);
  while (s.independent_left > 0) {
    if (interrupts().load() > 0) return false;
    s.phase_cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (interrupts().load() > 0) return false;  // also after a failed attempt: the error stops the sweep
  if (!s.tables_ready) {
    resolve_dependent_points(s);
    s.tables_ready = true;
  }
  return true;
}

void independent_finished(SweepState& s) {
  {
    std::lock_guard lock(s.phase_mu);
    --s.independent_left;
  }
  s.phase_cv.notify_all();
}

double point_budget(SweepState& s, int started) {
  const SweepOptions& o = s.o;
  if (o.budget.seconds <= 0) return 0;
  const double left = o.budget.seconds - s.elapsed();
  const int remaining = std::max(1, static_cast<int>(s.mine.size()) - started);
  return std::max(1e-3, left * static_cast<double>(std::max<std::size_t>(1, o.devices.size())) / remaining);
}

void finish_point(SweepState& s, int slot, PlanPoint& pt, const SearchResult* r, const std::string& error) {
  json line = {{"type", "point"},
               {"point", pt.key},
               {"point_index", pt.index},
               {"kernel", pt.family->name},
               {"problem_key", runtime::problem_key(pt.problem)},
               {"tokens", pt.tokens},
               {"total", static_cast<int>(pt.candidates.size())}};
  if (!pt.axes.empty()) line["axes"] = axes_json(pt.axes);
  if (pt.invalid_problem) line["skipped"] = true;
  std::string best;
  double best_us = 0;
  if (r) {
    line["evaluated"] = r->evaluated;
    line["rounds"] = r->rounds;
    line["budget_hit"] = r->budget_hit;
    auto key_of = [&](int i) { return i >= 0 ? json(pt.candidates[i].key) : json(nullptr); };
    line["winner"] = key_of(r->winner);
    line["runner_up"] = key_of(r->runner_up);
    line["default"] = key_of(r->default_index);
    // Which timer the ranking compared, and how many timed candidates another timer kept out.
    if (!r->timer.empty()) line["ranked_timer"] = r->timer;
    if (r->unranked > 0) line["unranked_other_timer"] = r->unranked;
    if (r->winner >= 0) {
      best = pt.candidates[r->winner].key;
      best_us = pt.candidates[r->winner].stats.median_us;
    }
  } else {
    line["evaluated"] = 0;
    line["error"] = error;
    best = "error: " + error;
  }
  // A resumed point is journaled again only when this run ended it differently (the earlier run
  // ended it in an error, or a crashed candidate measured again changed the winner): the reader
  // keeps a point's last line, so the new outcome replaces the old.
  const json old = s.get(s.cache_point, pt.key);
  if (old != line) s.record(s.cache_point, pt.key, line);
  int unvisited = 0, timed = 0;
  for (auto& c : pt.candidates) {
    unvisited += c.rounds == 0 ? 1 : 0;
    timed += c.ok() ? 1 : 0;
  }
  s.progress->point_finished(slot, pt.index, pt.label, best, best_us, timed, static_cast<int>(pt.candidates.size()), unvisited);
}

void device_loop(SweepState& s, int slot, int ordinal) {
  const SweepOptions& o = s.o;
  WorkerProcess w(s.launch);
  {
    const Reply r = w.call({{"op", "probe"}, {"backend", std::string(backend_name(o.backend))}, {"device", ordinal}},
                           std::max(120.0, 10 * o.watchdog_s), &interrupts(), 2, o.watchdog_s);
    if (r.kind == Reply::ok && r.body.value("ok", false)) {
      std::lock_guard lock(s.mu);
      s.copy_bw = std::max(s.copy_bw, r.body.value("copy_gbps", 0.0));
    } else {
      s.progress->message("moebench: warning: copy-bandwidth probe on device " + std::to_string(ordinal) + " failed (" +
                          (r.kind == Reply::ok ? r.body.value("error", std::string("?")) : r.error) +
                          "): % of peak is not reported");
    }
  }
  while (interrupts().load() == 0) {
    const std::size_t i = s.next.fetch_add(1);
    if (i >= s.mine.size()) break;
    const bool dependent = i >= s.first_dependent;
    if (dependent && !await_stage_tables(s)) break;
    PlanPoint& pt = s.plan.points[s.mine[i]];
    const int started = s.started.fetch_add(1);
    // A point that ends (done, failed or skipped) lets the dependent points come closer.
    auto ended = [&] {
      if (!dependent) independent_finished(s);
    };
    if (!pt.skip.empty()) {
      finish_point(s, slot, pt, nullptr, pt.skip);
      ended();
      continue;
    }
    SearchOptions so;
    so.strategy = o.strategy;
    so.rule = o.rule;
    so.budget_n = o.budget.candidates;
    so.budget_s = point_budget(s, started);
    so.seed = derive_seed(o.seed, pt.key);
    WorkerEvaluator ev(s, w, slot, ordinal, pt);
    SearchResult r;
    try {
      r = search(pt.candidates, so, ev);
    } catch (const Interrupted&) {
      break;
    } catch (const PointFailed& e) {
      finish_point(s, slot, pt, nullptr, e.why);
      ended();
      continue;
    }
    if (r.interrupted) break;
    finish_point(s, slot, pt, &r, "");
    ended();
  }
  w.stop();
}

json make_meta(SweepState& s, const JournalContents& jc, double wall_s) {
  const SweepOptions& o = s.o;
  std::set<std::string> timers, notes;
  for (auto& l : jc.lines)
    if (l.value("type", "") == "eval") {
      if (!l.value("timer", "").empty()) timers.insert(l.value("timer", ""));
      if (!l.value("note", "").empty()) notes.insert(l.value("note", ""));
    }
  std::string used;
  for (auto& t : timers) used += (used.empty() ? "" : ", ") + t;
  std::set<std::string> skipped;
  for (int i : s.mine)
    if (const PlanPoint& p = s.plan.points[i]; !p.skip.empty())
      skipped.insert(p.family->name + (p.axes.empty() ? "" : " " + axes_text(p.axes)) + ": " + p.skip);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  json tokens = json::array();
  for (auto t : o.tokens) tokens.push_back(t);
  double copy_bw = 0;
  {
    std::lock_guard lock(s.mu);  // a device thread may still be probing when the stage tables are written
    copy_bw = s.copy_bw;
  }
  json meta = {{"device", s.dev.name},
               {"sm_count", s.dev.sm_count},
               {"device_slug", runtime::device_slug(s.dev)},
               {"backend", std::string(backend_name(o.backend))},
               {"devices", o.devices},
               {"threads", o.backend == Backend::cpu ? s.dev.threads : 0},
               {"driver", cuda_driver_version()},
               {"cuda_runtime", cuda_runtime_version()},
               {"version", version_string()},
               {"git", git_revision()},
               {"command", o.command},
               {"host", host},
               {"written", utc_now()},
               {"wall_s", wall_s},
               {"resumed", o.resume},
               {"seed", o.seed},
               {"strategy", std::string(strategy_name(o.strategy))},
               {"budget", o.budget.text},
               {"space", o.space},
               {"shard", std::to_string(o.shard.index) + "/" + std::to_string(o.shard.count)},
               {"tokens", tokens},
               {"dist", o.replay.empty() ? o.dist : o.replay},
               {"rule", to_json(o.rule)},
               {"watchdog_s", o.watchdog_s},
               {"fingerprint", s.plan.fingerprint},
               {"timer",
                {{"mode", !o.engine.empty() && o.backend == Backend::cpu ? std::string(kInterpreterTimer)
                          : o.backend == Backend::cpu   ? std::string("steady_clock")
                          : o.backend == Backend::emu ? std::string("none")
                                                      : std::string(timer_mode_name(o.timer))},
                 {"used", used},
                 {"notes", notes}}},
               {"copy_bw_gbps", copy_bw},
               {"skipped", skipped},
               {"axes", axes_list(o.axes)},
               {"results_path", (fs::path(o.out_dir) / "results.json").string()}};
  // Where the layer's stage configs came from (with --tables none, a folder of this sweep's own).
  if (!s.stage_tables.empty()) meta["stage_tables"] = s.stage_tables;
  if (!o.engine.empty()) {
    meta["engine"] = o.engine;
    meta["engine_info"] = o.engine_info;
  }
  return meta;
}

}  // namespace

json journal_header(const SweepOptions& o, const Plan& plan, const DeviceInfo& dev) {
  json units = json::array();
  for (const SweepUnit& u : o.units) {
    units.push_back({{"kernel", u.family->name}, {"problem", params_to_json(u.problem)}});
    if (!u.axes.empty()) units.back()["axes"] = axes_json(u.axes);
  }
  json tokens = json::array();
  for (auto t : o.tokens) tokens.push_back(t);
  json h = {{"type", "header"},
          {"schema", kJournalSchema},
          {"device", dev.name},
          {"device_slug", runtime::device_slug(dev)},
          {"backend", std::string(backend_name(o.backend))},
          {"binary", version_string()},
          {"fingerprint", plan.fingerprint},
          // What the fingerprint hashes, by name, so a refused --resume can say what differs.
          {"plan", {{"units", units}, {"tokens", tokens}, {"space", o.space}, {"axes", axes_list(o.axes)}}},
          // Everything that changes what a measurement is: a resume under any other value would
          // mix two kinds of records in one table (cpu threads: times at 1 and 2 threads).
          {"settings",
           {{"strategy", std::string(strategy_name(o.strategy))},
            {"threads", o.backend == Backend::cpu ? dev.threads : 0},
            {"seed", o.seed},
            {"timer", std::string(timer_mode_name(o.timer))},
            {"cupti", o.cupti},
            {"dist", o.dist},
            {"zipf_s", o.zipf_s},
            {"replay", o.replay},
            {"budget_candidates", o.budget.candidates},
            {"rule", to_json(o.rule)}}},
          {"shard", {{"index", o.shard.index}, {"count", o.shard.count}}},
          {"command", o.command},
          {"created", utc_now()}};
  // Only where there is one, so the journals of moebench's own kernels read as before.
  if (!o.engine.empty()) h["settings"]["engine"] = o.engine;
  // Only where a unit is timed in a graph too (the layer): a stage sweep's journal reads as before.
  if (std::any_of(o.units.begin(), o.units.end(), [](const SweepUnit& u) { return u.graph_timed; }))
    h["settings"]["graph_calls"] = o.graph_calls;
  return h;
}

SweepOutcome run_sweep(const SweepOptions& o) {
  if (o.units.empty()) throw Error("nothing to sweep: no kernel family selected");
  if (o.tokens.empty()) throw Error("nothing to sweep: no token count");
  if (o.out_dir.empty()) throw Error("the sweep needs an output directory (--out)");
  if (o.backend == Backend::cuda && o.devices.empty()) throw Error("--devices selects no GPU");
  // Handlers from the start to the last write: SIGINT/SIGTERM never kill the sweep with no word,
  // nor while results and tables are written (they are quick, and then the run exits 130).
  InterruptGuard guard(o.handle_signals);
  SweepState s(o);
  s.launch = (o.launch.argv.empty() && !o.launch.in_process) ? self_exec_launch() : o.launch;
  if (o.backend == Backend::cuda) {
    for (int d : o.devices) require_cuda_device(d);
    s.dev = cuda_device_info(o.devices.front());
    for (int d : o.devices)
      if (cuda_device_info(d).name != s.dev.name)
        throw Error("--devices mixes GPU models (" + s.dev.name + ", " + cuda_device_info(d).name +
                    "): tables are per model, so sweep each model separately");
  } else {
    s.dev = o.backend == Backend::emu ? emu_device_info() : cpu_device_info(o.threads);
  }
  if (o.backend == Backend::emu && !o.tables_dir.empty())
    throw Error("the emu backend validates and does not time, so it writes no tables: leave --tables out (or use none)");
  s.plan = make_plan(o.units, o.tokens, o.backend, s.dev, o.space);
  check_plan_runs(s.plan, o.backend);
  std::vector<double> costs;
  for (const PlanPoint& p : s.plan.points) costs.push_back(p.estimate_s);
  s.mine = shard_points(costs, o.shard.index, o.shard.count);
  {
    const auto independent = [&](int i) { return !o.units[s.plan.points[i].unit].resolve; };
    std::stable_partition(s.mine.begin(), s.mine.end(), independent);
    s.first_dependent = static_cast<std::size_t>(std::count_if(s.mine.begin(), s.mine.end(), independent));
    s.independent_left = s.first_dependent;
    if (s.first_dependent < s.mine.size())
      s.stage_tables = o.tables_dir.empty() ? (fs::path(o.out_dir) / "tables").string() : o.tables_dir;
  }

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) throw Error("cannot create --out " + o.out_dir + ": " + ec.message());
  // One sweep per --out for its whole life: two runs resuming one journal would append the same
  // measurements twice and mix their samples.
  const DirLock out_lock(o.out_dir, LockWait::refuse,
                         ": two sweeps cannot share one --out; wait for that one to finish, or give another --out");
  if (!o.tables_dir.empty()) check_table_places(o.tables_dir, runtime::device_slug(s.dev), table_keys(s.plan));
  const std::string jpath = (fs::path(o.out_dir) / "journal.jsonl").string();
  const json header = journal_header(o, s.plan, s.dev);
  if (o.resume) {
    if (!fs::exists(jpath, ec)) throw Error("--resume: there is no journal in " + o.out_dir + " (run without --resume to start)");
    const JournalContents old = read_journal(jpath);
    check_resumable(old.header, header, jpath);
    load_resume_cache(s, old, o.retry_failed);
    remove_stale_temp_files(o.out_dir);
  }
  s.journal = std::make_unique<JournalWriter>(jpath, header, !o.resume);

  int candidates = 0;
  std::vector<ProgressPoint> progress_points;
  for (int i : s.mine) {
    const PlanPoint& pt = s.plan.points[i];
    candidates += static_cast<int>(pt.candidates.size());
    progress_points.push_back({pt.index, {pt.family->name, pt.estimate_s, static_cast<int>(pt.candidates.size())}});
  }
  const int n_workers = o.backend == Backend::cuda ? static_cast<int>(o.devices.size()) : 1;
  s.progress = std::make_unique<Progress>(o.progress, n_workers, std::move(progress_points));
  {
    std::vector<std::thread> threads;
    for (int slot = 0; slot < n_workers; ++slot) {
      const int ordinal = o.backend == Backend::cuda ? o.devices[slot] : 0;
      threads.emplace_back([&s, slot, ordinal] {
        try {
          device_loop(s, slot, ordinal);
        } catch (...) {
          std::lock_guard lock(s.mu);
          if (!s.error) s.error = std::current_exception();
          interrupts().fetch_add(1);  // stop the other devices too
        }
      });
    }
    for (auto& t : threads) t.join();
    s.progress->finish();
  }
  const bool interrupted = interrupts().load() > 0 && !s.error;
  s.journal.reset();

  SweepOutcome out;
  out.wall_s = s.elapsed();
  out.journal_path = jpath;
  const JournalContents jc = read_journal(jpath);
  out.results = build_results(jc, make_meta(s, jc, out.wall_s));
  out.results_path = (fs::path(o.out_dir) / "results.json").string();
  out.csv_path = (fs::path(o.out_dir) / "results.csv").string();
  out.summary_path = (fs::path(o.out_dir) / "summary.md").string();
  out.summary_md = markdown_summary(out.results);
  // The tables of the finished points are written even when --out cannot take the results (its
  // disk is full, say): the error about --out comes after them.
  std::exception_ptr out_error;
  try {
    write_results(out.results_path, out.results);
    write_text_atomic(out.csv_path, results_csv(out.results));
    write_text_atomic(out.summary_path, out.summary_md);
  } catch (const Error&) {
    out_error = std::current_exception();
  }
  if (!o.tables_dir.empty()) out.tables = write_tables(out.results, o.tables_dir);
  // What stopped the sweep (a journal past the disk's or the file size limit, say) before
  // what then failed the same way.
  if (s.error) std::rethrow_exception(s.error);
  if (out_error) std::rethrow_exception(out_error);
  out.interrupted = interrupted;
  out.points = static_cast<int>(s.mine.size());
  out.candidates = candidates;
  for (auto& p : out.results["points"]) {
    ++out.points_done;
    out.timed += p.value("timed", 0);
    if (!p.contains("error")) continue;
    const std::string what = p.value("point", std::string("?")) + ": " + p.value("error", "");
    (p.value("skipped", false) ? out.skipped_points : out.failed_points).push_back(what);
  }
  return out;
}

}  // namespace moe::tuner
