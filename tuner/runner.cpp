#include "tuner/runner.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/journal.hpp"
#include "tuner/report.hpp"
#include "tuner/results.hpp"
#include "tuner/tables.hpp"
#include "tuner/version.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

namespace {

using clock_type = std::chrono::steady_clock;

std::atomic<int> g_interrupts{0};
extern "C" void on_interrupt(int) {
  static const char first[] = "\nmoebench: interrupted: finishing the current candidate (interrupt again to abandon it)\n";
  static const char second[] = "\nmoebench: abandoning the current candidate\n";
  const int n = g_interrupts.fetch_add(1) + 1;
  ssize_t ignored = n == 1 ? ::write(2, first, sizeof first - 1) : n == 2 ? ::write(2, second, sizeof second - 1) : 0;
  (void)ignored;
}

// Installs the interrupt handlers for the sweep's lifetime and restores the old ones after.
class SignalGuard {
 public:
  explicit SignalGuard(bool active) : active_(active) {
    g_interrupts = 0;
    if (!active_) return;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking poll wakes up
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe_);  // a dead worker's pipe gives EPIPE, not death
  }
  ~SignalGuard() {
    if (!active_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
  }

 private:
  bool active_;
  struct sigaction old_int_ {}, old_term_{}, old_pipe_{};
};

std::uint64_t mix(std::uint64_t seed, const std::string& s) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

struct Interrupted {};  // a candidate was abandoned on a second interrupt
struct PointFailed {
  std::string why;
};

std::string cache_key(const std::string& point, const std::string& config, int round) {
  return point + "\n" + config + "\n" + std::to_string(round);
}

struct Shared {
  const SweepOptions& o;
  WorkerLaunch launch;
  DeviceInfo dev;
  Plan plan;
  std::vector<int> mine;
  std::unique_ptr<JournalWriter> journal;
  std::map<std::string, json> cache_eval, cache_prep, cache_point;
  std::unique_ptr<Progress> progress;
  std::atomic<std::size_t> next{0};
  std::atomic<int> started{0};
  std::mutex mu;
  double copy_bw = 0;
  clock_type::time_point t0 = clock_type::now();
  std::exception_ptr error;

  double elapsed() const { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

  bool has(std::map<std::string, json>& m, const std::string& k) {
    std::lock_guard lock(mu);
    return m.count(k) != 0;
  }
  json get(std::map<std::string, json>& m, const std::string& k) {
    std::lock_guard lock(mu);
    auto it = m.find(k);
    return it == m.end() ? json() : it->second;
  }
  void record(std::map<std::string, json>& m, const std::string& k, const json& line) {
    journal->append(line);
    std::lock_guard lock(mu);
    m[k] = line;
  }
};

class DeviceEvaluator : public Evaluator {
 public:
  DeviceEvaluator(Shared& s, WorkerProcess& w, int slot, int ordinal, const PlanPoint& pt)
      : s_(s), w_(w), slot_(slot), ordinal_(ordinal), pt_(pt), pkey_(runtime::problem_key(pt.problem)) {
    if (json prep = s_.get(s_.cache_prep, pt_.key); prep.is_object()) prepare_s_ = prep.value("prepare_s", 0.0);
  }

  void evaluate(Candidate& c, int round, const StopRule& rule, double incumbent_us) override {
    const bool first = c.rounds == 0;
    s_.progress->candidate_started(slot_, pt_.label, c.key);
    const std::string key = cache_key(pt_.key, c.key, round);
    json line = s_.get(s_.cache_eval, key);
    if (line.is_null()) {
      line = run(c, round, rule, incumbent_us);
      s_.record(s_.cache_eval, key, line);
    }
    apply(c, line);
    s_.progress->candidate_finished(slot_, c.status, c.stats.median_us, first);
  }

  bool interrupted() const override { return g_interrupts.load() > 0; }

 private:
  int cand_index(const Candidate& c) const { return static_cast<int>(&c - pt_.candidates.data()); }

  json base_line(const Candidate& c, int round) const {
    return {{"type", "eval"},
            {"point", pt_.key},
            {"point_index", pt_.index},
            {"kernel", pt_.family->name},
            {"problem", params_to_json(pt_.problem)},
            {"problem_key", pkey_},
            {"tokens", pt_.tokens},
            {"cand_index", cand_index(c)},
            {"config", params_to_json(c.config)},
            {"config_key", c.key},
            {"is_default", c.is_default},
            {"round", round}};
  }

  static void apply(Candidate& c, const json& l) {
    c.status = l.value("status", "failed");
    if (l.contains("validation") && l["validation"].is_object()) c.validated = l["validation"].value("ok", false);
    for (auto& x : l.value("samples_us", json::array())) c.samples_us.push_back(x.get<double>());
    c.stats = summarize(c.samples_us);
    ++c.rounds;
    c.early_stop = l.value("early_stop", false);  // of the latest measurement: a later round may redeem it
    if (!l.value("error", "").empty()) c.error = l.value("error", "");
  }

  void ensure_prepared() {
    if (prepared_ && w_.alive() && w_.pid() == prepared_pid_) return;
    const SweepOptions& o = s_.o;
    json req = {{"op", "prepare"},
                {"family", pt_.family->name},
                {"backend", std::string(backend_name(o.backend))},
                {"device", ordinal_},
                {"threads", o.threads},
                {"problem", params_to_json(pt_.problem)},
                {"seed", mix(o.seed, pt_.key)},
                {"dist", o.dist},
                {"zipf_s", o.zipf_s},
                {"replay", o.replay},
                {"timer", std::string(timer_mode_name(o.timer))},
                {"cupti", o.cupti}};
    const Reply r = w_.call(req, std::max(120.0, 10 * o.watchdog_s), &g_interrupts);
    if (r.kind == Reply::cancelled) throw Interrupted{};
    if (r.kind != Reply::ok) throw PointFailed{"preparing the problem: " + r.error};
    if (!r.body.value("ok", false)) throw PointFailed{r.body.value("error", std::string("prepare failed"))};
    prepare_s_ = r.body.value("prepare_s", 0.0);
    prepared_ = true;
    prepared_pid_ = w_.pid();
    if (!s_.has(s_.cache_prep, pt_.key))
      s_.record(s_.cache_prep, pt_.key,
                {{"type", "prep"}, {"point", pt_.key}, {"point_index", pt_.index}, {"bytes", r.body.value("bytes", 0.0)},
                 {"flops", r.body.value("flops", 0.0)}, {"prepare_s", prepare_s_}});
  }

  // A failed request: the worker crashed, hung or was abandoned.
  bool lost(const Reply& r, json& line, const char* phase) {
    if (r.kind == Reply::cancelled) throw Interrupted{};
    if (r.kind == Reply::ok) {
      if (r.body.value("fatal", false)) w_.kill();  // it exits after a sticky error; reap it now
      return false;
    }
    line["status"] = r.kind == Reply::timeout ? "timeout" : "crashed";
    line["error"] = r.error;
    line["phase"] = phase;
    return true;
  }

  json run(Candidate& c, int round, const StopRule& rule, double incumbent_us) {
    const SweepOptions& o = s_.o;
    json line = base_line(c, round);
    if (!c.invalid_reason.empty()) {
      line["status"] = "invalid";
      line["error"] = c.invalid_reason;
      return line;
    }
    ensure_prepared();
    if (!c.validated) {
      // Fresh inputs per candidate; one fresh set per point when making a problem is expensive
      // (a reference on the host for every candidate would dominate a large sweep).
      const std::uint64_t seed = mix(o.seed, pt_.key + (prepare_s_ > 0.25 ? std::string("#validate") : "#" + c.key));
      const Reply r = w_.call({{"op", "validate"}, {"config", params_to_json(c.config)}, {"seed", seed}},
                              o.watchdog_s + 2 * prepare_s_, &g_interrupts);
      line["validate_seed"] = seed;
      if (lost(r, line, "validate")) return line;
      if (r.body.contains("validation")) line["validation"] = r.body["validation"];
      const std::string st = r.body.value("status", "failed");
      if (st != "ok") {
        line["status"] = st;
        line["error"] = r.body.value("error", st == "invalid" ? "validation failed: " + r.body["validation"].value("summary", "") : st);
        line["phase"] = "validate";
        return line;
      }
    }
    const json req = {{"op", "measure"},
                      {"config", params_to_json(c.config)},
                      {"rule", to_json(rule)},
                      {"incumbent_us", incumbent_us},
                      {"prior_us", c.samples_us}};
    const Reply r = w_.call(req, o.watchdog_s + rule.max_time_s, &g_interrupts);
    if (lost(r, line, "measure")) return line;
    const std::string st = r.body.value("status", "failed");
    line["status"] = st;
    if (st != "ok") {
      line["error"] = r.body.value("error", st);
      line["phase"] = "measure";
      return line;
    }
    line["samples_us"] = r.body.value("samples_us", json::array());
    line["reason"] = r.body.value("reason", "");
    line["early_stop"] = r.body.value("reason", "") == "early_stop";
    line["incumbent_us"] = incumbent_us;
    line["timer"] = r.body.value("timer", "");
    for (const char* k : {"note", "batch", "kernels"})
      if (r.body.contains(k)) line[k] = r.body[k];
    return line;
  }

  Shared& s_;
  WorkerProcess& w_;
  int slot_, ordinal_;
  const PlanPoint& pt_;
  std::string pkey_;
  bool prepared_ = false;
  int prepared_pid_ = -1;
  double prepare_s_ = 0;
};

double point_budget(Shared& s, int started) {
  const SweepOptions& o = s.o;
  if (o.budget.seconds <= 0) return 0;
  const double left = o.budget.seconds - s.elapsed();
  const int remaining = std::max(1, static_cast<int>(s.mine.size()) - started);
  return std::max(1e-3, left * static_cast<double>(std::max<std::size_t>(1, o.devices.size())) / remaining);
}

void finish_point(Shared& s, int slot, PlanPoint& pt, const SearchResult* r, const std::string& error) {
  json line = {{"type", "point"},
               {"point", pt.key},
               {"point_index", pt.index},
               {"kernel", pt.family->name},
               {"problem_key", runtime::problem_key(pt.problem)},
               {"tokens", pt.tokens},
               {"total", static_cast<int>(pt.candidates.size())}};
  int evaluated = 0;
  std::string best;
  double best_us = 0;
  if (r) {
    evaluated = r->evaluated;
    line["evaluated"] = r->evaluated;
    line["rounds"] = r->rounds;
    line["budget_hit"] = r->budget_hit;
    auto key_of = [&](int i) { return i >= 0 ? json(pt.candidates[i].key) : json(nullptr); };
    line["winner"] = key_of(r->winner);
    line["runner_up"] = key_of(r->runner_up);
    line["default"] = key_of(r->default_index);
    if (r->winner >= 0) {
      best = pt.candidates[r->winner].key;
      best_us = pt.candidates[r->winner].stats.median_us;
    }
  } else {
    line["evaluated"] = 0;
    line["error"] = error;
    best = "error: " + error;
  }
  if (!s.has(s.cache_point, pt.key)) s.record(s.cache_point, pt.key, line);
  int unvisited = 0;
  for (auto& c : pt.candidates) unvisited += c.rounds == 0 ? 1 : 0;
  s.progress->point_finished(slot, pt.label, best, best_us, evaluated, static_cast<int>(pt.candidates.size()), unvisited);
}

void device_loop(Shared& s, int slot, int ordinal) {
  const SweepOptions& o = s.o;
  WorkerProcess w(s.launch);
  {
    const Reply r = w.call({{"op", "probe"}, {"backend", std::string(backend_name(o.backend))}, {"device", ordinal}},
                           std::max(120.0, 10 * o.watchdog_s), &g_interrupts);
    if (r.kind == Reply::ok && r.body.value("ok", false)) {
      std::lock_guard lock(s.mu);
      s.copy_bw = std::max(s.copy_bw, r.body.value("copy_gbps", 0.0));
    } else {
      s.progress->message("moebench: warning: copy-bandwidth probe on device " + std::to_string(ordinal) + " failed (" +
                          (r.kind == Reply::ok ? r.body.value("error", std::string("?")) : r.error) +
                          "): % of peak is not reported");
    }
  }
  while (g_interrupts.load() == 0) {
    const std::size_t i = s.next.fetch_add(1);
    if (i >= s.mine.size()) break;
    PlanPoint& pt = s.plan.points[s.mine[i]];
    const int started = s.started.fetch_add(1);
    if (!pt.skip.empty()) {
      finish_point(s, slot, pt, nullptr, pt.skip);
      continue;
    }
    SearchOptions so;
    so.strategy = o.strategy;
    so.rule = o.rule;
    so.budget_n = o.budget.candidates;
    so.budget_s = point_budget(s, started);
    so.seed = mix(o.seed, pt.key);
    DeviceEvaluator ev(s, w, slot, ordinal, pt);
    SearchResult r;
    try {
      r = search(pt.candidates, so, ev);
    } catch (const Interrupted&) {
      break;
    } catch (const PointFailed& e) {
      finish_point(s, slot, pt, nullptr, e.why);
      continue;
    }
    if (r.interrupted) break;
    finish_point(s, slot, pt, &r, "");
  }
  w.stop();
}

json make_meta(Shared& s, const JournalContents& jc, double wall_s) {
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
    if (!s.plan.points[i].skip.empty()) skipped.insert(s.plan.points[i].family->name + ": " + s.plan.points[i].skip);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  json tokens = json::array();
  for (auto t : o.tokens) tokens.push_back(t);
  return {{"device", s.dev.name},
          {"device_slug", runtime::device_slug(s.dev)},
          {"backend", std::string(backend_name(o.backend))},
          {"devices", o.devices},
          {"threads", o.backend == Backend::cpu ? s.dev.threads : 0},
          {"driver", cuda_driver_version()},
          {"cuda_runtime", cuda_runtime_version()},
          {"version", version_string()},
          {"git", MOEBENCH_GIT},
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
           {{"mode", o.backend == Backend::cpu ? std::string("steady_clock") : std::string(timer_mode_name(o.timer))},
            {"used", used},
            {"notes", notes}}},
          {"copy_bw_gbps", s.copy_bw},
          {"skipped", skipped},
          {"results_path", (fs::path(o.out_dir) / "results.json").string()}};
}

}  // namespace

json journal_header(const SweepOptions& o, const Plan& plan, const DeviceInfo& dev) {
  return {{"type", "header"},
          {"schema", kJournalSchema},
          {"device", dev.name},
          {"device_slug", runtime::device_slug(dev)},
          {"backend", std::string(backend_name(o.backend))},
          {"binary", version_string()},
          {"fingerprint", plan.fingerprint},
          {"settings",
           {{"strategy", std::string(strategy_name(o.strategy))},
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
}

SweepOutcome run_sweep(const SweepOptions& o) {
  if (o.units.empty()) throw Error("nothing to sweep: no kernel family selected");
  if (o.tokens.empty()) throw Error("nothing to sweep: no token count");
  if (o.out_dir.empty()) throw Error("the sweep needs an output directory (--out)");
  if (o.backend == Backend::cuda && o.devices.empty()) throw Error("--devices selects no GPU");
  Shared s{o};
  s.launch = (o.launch.argv.empty() && !o.launch.in_process) ? self_exec_launch() : o.launch;
  if (o.backend == Backend::cuda) {
    for (int d : o.devices) require_cuda_device(d);
    s.dev = cuda_device_info(o.devices.front());
    for (int d : o.devices)
      if (cuda_device_info(d).name != s.dev.name)
        throw Error("--devices mixes GPU models (" + s.dev.name + ", " + cuda_device_info(d).name +
                    "): tables are per model, so sweep each model separately");
  } else {
    s.dev = cpu_device_info(o.threads);
  }
  s.plan = make_plan(o.units, o.tokens, o.backend, s.dev, o.space);
  s.mine = shard_points(static_cast<int>(s.plan.points.size()), o.shard.index, o.shard.count);

  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) throw Error("cannot create --out " + o.out_dir + ": " + ec.message());
  const std::string jpath = (fs::path(o.out_dir) / "journal.jsonl").string();
  const json header = journal_header(o, s.plan, s.dev);
  if (o.resume) {
    if (!fs::exists(jpath)) throw Error("--resume: there is no journal in " + o.out_dir + " (run without --resume to start)");
    const JournalContents old = read_journal(jpath);
    check_resumable(old.header, header, jpath);
    for (auto& l : old.lines) {
      const std::string type = l.value("type", "");
      if (type == "eval") s.cache_eval[cache_key(l.value("point", ""), l.value("config_key", ""), l.value("round", 0))] = l;
      else if (type == "prep") s.cache_prep[l.value("point", "")] = l;
      else if (type == "point") s.cache_point[l.value("point", "")] = l;
    }
  }
  s.journal = std::make_unique<JournalWriter>(jpath, header, !o.resume);

  int candidates = 0;
  for (int i : s.mine) candidates += static_cast<int>(s.plan.points[i].candidates.size());
  const int n_workers = o.backend == Backend::cuda ? static_cast<int>(o.devices.size()) : 1;
  s.progress = std::make_unique<Progress>(o.progress, n_workers, candidates, static_cast<int>(s.mine.size()));
  {
    SignalGuard guard(o.handle_signals);
    std::vector<std::thread> threads;
    for (int slot = 0; slot < n_workers; ++slot) {
      const int ordinal = o.backend == Backend::cuda ? o.devices[slot] : 0;
      threads.emplace_back([&s, slot, ordinal] {
        try {
          device_loop(s, slot, ordinal);
        } catch (...) {
          std::lock_guard lock(s.mu);
          if (!s.error) s.error = std::current_exception();
          g_interrupts.fetch_add(1);  // stop the other devices too
        }
      });
    }
    for (auto& t : threads) t.join();
    s.progress->finish();
  }
  const bool interrupted = g_interrupts.load() > 0 && !s.error;
  s.journal.reset();

  SweepOutcome out;
  out.wall_s = s.elapsed();
  out.journal_path = jpath;
  const JournalContents jc = read_journal(jpath);
  out.results = build_results(jc, make_meta(s, jc, out.wall_s));
  out.results_path = (fs::path(o.out_dir) / "results.json").string();
  out.csv_path = (fs::path(o.out_dir) / "results.csv").string();
  out.summary_path = (fs::path(o.out_dir) / "summary.md").string();
  write_results(out.results_path, out.results);
  write_text_atomic(out.csv_path, results_csv(out.results));
  out.summary_md = markdown_summary(out.results);
  write_text_atomic(out.summary_path, out.summary_md);
  if (!o.tables_dir.empty()) out.tables = write_tables(out.results, o.tables_dir);
  if (s.error) std::rethrow_exception(s.error);
  out.interrupted = interrupted;
  out.points = static_cast<int>(s.mine.size());
  out.candidates = candidates;
  for (auto& p : out.results["points"]) {
    ++out.points_done;
    out.timed += p.value("evaluated", 0);
  }
  return out;
}

}  // namespace moe::tuner
