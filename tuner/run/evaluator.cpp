#include "tuner/run/evaluator.hpp"

#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/base/interrupt.hpp"

namespace moe::tuner {

WorkerEvaluator::WorkerEvaluator(SweepState& s, WorkerProcess& w, int slot, int ordinal, const PlanPoint& pt)
    : s_(s), w_(w), slot_(slot), ordinal_(ordinal), pt_(pt), pkey_(runtime::problem_key(pt.problem)) {
  if (json prep = s_.get(s_.cache_prep, pt_.key); prep.is_object()) prepare_s_ = prep.value("prepare_s", 0.0);
}

void WorkerEvaluator::evaluate(Candidate& c, int round, const StopRule& rule, double incumbent_us) {
  const bool first = c.rounds == 0;
  s_.progress->candidate_started(slot_, pt_.index, pt_.label, c.key);
  const std::string key = eval_key(pt_.key, c.key, round);
  json line = s_.get(s_.cache_eval, key);
  const bool replayed = !line.is_null();
  if (!replayed) {
    line = run(c, round, rule, incumbent_us);
    if (s_.retry.count(key)) line["retry"] = true;  // replaces the crashed or timed-out line of the earlier run
    s_.record(s_.cache_eval, key, line);
  }
  apply(c, line);
  s_.progress->candidate_finished(slot_, c.status, c.stats.median_us, first, replayed);
}

bool WorkerEvaluator::interrupted() const { return interrupts().load() > 0; }

json WorkerEvaluator::base_line(const Candidate& c, int round) const {
  json line = {{"type", "eval"},
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
  // What an "auto" config ran as, so a reader sees the configs the layer was really timed with.
  if (auto it = pt_.resolved.find(c.key); it != pt_.resolved.end()) {
    line["resolved_config"] = params_to_json(it->second.config);
    line["config_source"] = it->second.source;
  }
  // A vendor library's or an engine's kernel: the summary puts the best of ours beside it.
  if (const BackendImpl* impl = pt_.family->backend(s_.o.backend))
    if (const std::string peer = peer_of(*impl, run_config(c)); !peer.empty()) line["peer"] = peer;
  return line;
}

const Params& WorkerEvaluator::run_config(const Candidate& c) const {
  auto it = pt_.resolved.find(c.key);
  return it == pt_.resolved.end() ? c.config : it->second.config;
}

void WorkerEvaluator::apply(Candidate& c, const json& l) {
  c.status = l.value("status", "failed");
  if (l.contains("validation") && l["validation"].is_object()) c.validated = l["validation"].value("ok", false);
  // A measurement that changed timer voids the candidate's earlier samples: one statistic, one timer.
  if (l.value("restarted", false)) c.samples_us.clear();
  for (auto& x : l.value("samples_us", json::array())) c.samples_us.push_back(x.get<double>());
  if (!l.value("timer", "").empty()) c.timer = l.value("timer", "");
  c.stats = summarize(c.samples_us);
  ++c.rounds;
  c.early_stop = l.value("early_stop", false);  // of the latest measurement: a later round may redeem it
  if (!l.value("error", "").empty()) c.error = l.value("error", "");
  if (l.contains("call_us")) c.call_s = l.value("call_us", 0.0) * 1e-6;
}

void WorkerEvaluator::ensure_prepared() {
  if (prepared_ && w_.alive() && w_.pid() == prepared_pid_) return;
  const SweepOptions& o = s_.o;
  json req = {{"op", "prepare"},
              {"family", pt_.family->name},
              {"backend", std::string(backend_name(o.backend))},
              {"device", ordinal_},
              {"threads", o.threads},
              {"problem", params_to_json(pt_.problem)},
              {"seed", derive_seed(o.seed, pt_.key)},
              {"dist", o.dist},
              {"zipf_s", o.zipf_s},
              {"replay", o.replay},
              {"timer", std::string(timer_mode_name(o.timer))},
              {"cupti", o.cupti},
              {"save_invalid", o.save_invalid}};
  // Making a large problem may take minutes, all of them busy: the watchdog goes by whether the
  // worker does anything, the long limit only by how long it may keep at it.
  const Reply r = w_.call(req, std::max(120.0, 10 * o.watchdog_s), &interrupts(), 2, o.watchdog_s);
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
bool WorkerEvaluator::lost(const Reply& r, json& line, const char* phase) {
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

json WorkerEvaluator::run(Candidate& c, int round, const StopRule& rule, double incumbent_us) {
  const SweepOptions& o = s_.o;
  json line = base_line(c, round);
  if (!c.invalid_reason.empty()) {
    line["status"] = "invalid";
    line["error"] = c.invalid_reason;
    return line;
  }
  ensure_prepared();
  if (!c.validated) {
    // Fresh inputs per candidate; the point's own inputs when making a problem is expensive (a
    // reference on the host for every candidate would dominate a large sweep, and a second
    // instance would double the problem on the device).
    const std::uint64_t seed =
        prepare_s_ > 0.25 ? derive_seed(o.seed, pt_.key) : derive_seed(o.seed, pt_.key + "#" + c.key);
    const Reply r = w_.call({{"op", "validate"}, {"config", params_to_json(run_config(c))}, {"seed", seed}},
                            o.watchdog_s + 2 * prepare_s_, &interrupts());
    line["validate_seed"] = seed;
    if (lost(r, line, "validate")) return line;
    if (r.body.contains("validation")) line["validation"] = r.body["validation"];
    if (r.body.contains("saved")) line["saved"] = r.body["saved"];
    if (r.body.contains("call_us")) {
      line["call_us"] = r.body["call_us"];
      c.call_s = r.body.value("call_us", 0.0) * 1e-6;
    }
    const std::string st = r.body.value("status", "failed");
    if (st != "ok") {
      line["status"] = st;
      line["error"] = r.body.value("error", st == "invalid" ? "validation failed: " + r.body["validation"].value("summary", "") : st);
      line["phase"] = "validate";
      return line;
    }
    // emu validates only: the record carries the validation and no times.
    if (o.backend == Backend::emu) {
      line["status"] = r.body.contains("not_emulated") ? "not emulated" : "ok";
      if (r.body.contains("not_emulated")) line["error"] = r.body["not_emulated"];
      return line;
    }
  }
  json req = {{"op", "measure"},
              {"config", params_to_json(run_config(c))},
              {"rule", to_json(rule)},
              {"incumbent_us", incumbent_us},
              {"prior_us", c.samples_us},
              {"prior_timer", c.timer}};
  // The layer is timed again inside a CUDA graph of N calls: its own samples, its own time-out.
  const int graph_calls = o.units[pt_.unit].graph_timed ? o.graph_calls : 0;
  if (graph_calls > 0) req["graph_calls"] = graph_calls;
  const double graph_s = graph_calls > 0 ? rule.max_time_s + 4.0 * graph_calls * c.call_s : 0;
  // A slow but working candidate needs a warm-up and a sample even past the time-out.
  const Reply r = w_.call(req, o.watchdog_s + rule.max_time_s + 4 * c.call_s + graph_s, &interrupts());
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
  for (const char* k : {"restarted", "note", "batch", "kernels", "kernel_attrs", "gpu", "throttled", "graph"})
    if (r.body.contains(k)) line[k] = r.body[k];
  return line;
}

}  // namespace moe::tuner
