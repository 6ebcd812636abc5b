#include "tuner/run/worker.hpp"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "io/npy.hpp"
#include "common/emu_backend.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/measure/cupti_timer.hpp"
#include "tuner/measure/gpu_state_run.hpp"
#include "tuner/measure/graph_timing.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/base/line_io.hpp"
#include "tuner/measure/memory_check.hpp"
#include "tuner/measure/nvml.hpp"
#include "tuner/measure/save_case.hpp"
#include "tuner/measure/timer_cpu.hpp"
#include "tuner/measure/timer_cuda.hpp"
#include "tuner/base/version.hpp"

namespace moe::tuner {

const FamilyResolver& library_families() {
  static const FamilyResolver r = [](const std::string& n) -> const FamilyDesc& { return moe::family(n); };
  return r;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A failure the worker cannot survive: the device is left in a sticky error state.
struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Worker {
 public:
  Worker(const FamilyResolver& resolve, std::string host_timer) : resolve_(resolve), host_timer_(std::move(host_timer)) {}
  ~Worker() {
    bench_.reset();
    if (cupti_) {
      cuda_device_idle(dev_.ordinal);
      cupti_->release();
    }
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  json handle(const json& req) {
    const std::string op = req.value("op", "");
    if (op == "probe") return probe(req);
    if (op == "prepare") return prepare(req);
    if (op == "validate") return guarded([&] { return validate(req); });
    if (op == "measure") return guarded([&] { return measure(req); });
    throw Error("worker: unknown request '" + op + "'");
  }

 private:
  template <class F>
  json guarded(F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      json r = {{"status", "failed"}, {"error", e.what()}};
      if (backend_ == Backend::cuda) {
        const std::string sticky = cuda_sticky_error(dev_.ordinal);
        if (!sticky.empty()) {
          r["status"] = "crashed";
          r["error"] = std::string(e.what()) + " (sticky CUDA error " + sticky + ": the worker restarts)";
          r["fatal"] = true;
        }
      }
      return r;
    }
  }

  json probe(const json& req) {
    const Backend b = parse_backend(req.value("backend", "cpu"));
    json r = {{"ok", true}, {"version", version_string()}};
    if (b == Backend::cuda) {
      const int ord = req.value("device", 0);
      r["copy_gbps"] = cuda_copy_bandwidth_gbps(ord);
      r["device_name"] = cuda_device_info(ord).name;
    } else {
      r["copy_gbps"] = host_copy_bandwidth_gbps();
    }
    return r;
  }

  json prepare(const json& req) {
    const auto t0 = std::chrono::steady_clock::now();
    bench_.reset();
    point_.reset();
    vcache_.reset();
    family_ = &resolve_(req.at("family").get<std::string>());
    backend_ = parse_backend(req.value("backend", "cpu"));
    threads_ = req.value("threads", 0);
    dev_ = backend_ == Backend::cuda  ? cuda_device_info(req.value("device", 0))
           : backend_ == Backend::emu ? emu_device_info()
                                      : cpu_device_info(threads_);
    if (backend_ == Backend::cuda) pci_ = cuda_pci_bus_id(dev_.ordinal);
    problem_ = params_from_json(req.at("problem"), "problem");
    opt_ = InputOptions{};
    opt_.dist = req.value("dist", "uniform");
    opt_.zipf_s = req.value("zipf_s", 1.2);
    const std::string replay = req.value("replay", "");
    if (!replay.empty()) {
      replay_ = read_npy(replay);  // captured logits [N,E] or ids [N,k]
      opt_.dist = "replay";
      opt_.replay = &*replay_;
    }
    opt_.seed = req.value("seed", std::uint64_t{0});
    save_invalid_ = req.value("save_invalid", "");
    const TimerMode mode = parse_timer_mode(req.value("timer", "cold"));
    // Refused before the host makes anything when one copy will not fit on the device.
    if (backend_ == Backend::cuda)
      check_device_fits(*family_, complete(family_->problem_params, problem_, "problem"), dev_,
                        mode == TimerMode::cold ? static_cast<double>(l2_flush_bytes(dev_.l2_bytes)) : 0.0,
                        "the L2 flush buffer");
    point_ = std::make_unique<Prepared>(moe::tuner::prepare(*family_, problem_, opt_));
    if (backend_ == Backend::cuda) {
      const bool cupti = req.value("cupti", true);
      if (cupti && mode == TimerMode::cold) hold_cupti();
      bench_ = std::make_unique<CudaBench>(*point_, dev_, mode, cupti);
    }
    return {{"ok", true},
            {"prepare_s", seconds_since(t0)},
            {"bytes", point_->cost.bytes},
            {"flops", point_->cost.flops}};
  }

  // CUPTI collection stays on from the first CUPTI-timed point to the worker's end: switching it
  // off per point is what can deadlock (CUPTI 13.0 GA), and each bench only adds a holder.
  void hold_cupti() {
    if (cupti_) return;
    cupti_ = CuptiKernelTimer::get(nullptr);
    if (cupti_) cupti_->acquire();
  }

  const Prepared& need_point() const {
    if (!point_) throw Error("worker: no prepared point (protocol error)");
    return *point_;
  }

  json validate(const json& req) {
    const Prepared& p = need_point();
    const auto t0 = std::chrono::steady_clock::now();
    const Params config = params_from_json(req.at("config"), "config");
    const std::uint64_t seed = req.value("seed", std::uint64_t{0});
    // The point's own seed: the gate runs on the point's inputs, and on the device on the
    // bench's own tensors, so a large problem is held once (and uploaded once) per point.
    if (seed == opt_.seed) {
      const Outcome out = bench_ ? bench_->validate(config) : run_backend(p, backend_, config, dev_);
      return gate_reply(p, config, out, t0);
    }
    // Fresh inputs for the gate: a new seed means a new problem instance (and reference).
    if (!vcache_ || vseed_ != seed) {
      InputOptions o = opt_;
      o.seed = seed;
      vcache_ = std::make_unique<Prepared>(moe::tuner::prepare(*p.family, p.problem, o));
      vseed_ = seed;
    }
    return gate_reply(*vcache_, config, run_backend(*vcache_, backend_, config, dev_), t0);
  }

  json gate_reply(const Prepared& p, const Params& config, const Outcome& out, std::chrono::steady_clock::time_point t0) {
    json r = {{"status", out.validation.ok ? "ok" : "invalid"},
              {"validation", to_json(out.validation)},
              {"validate_s", seconds_since(t0)}};
    if (!out.times_us.empty()) r["call_us"] = out.times_us.front();
    if (!out.not_emulated.empty()) r["not_emulated"] = out.not_emulated;
    if (!out.validation.ok && !save_invalid_.empty())
      r["saved"] = save_invalid_case(save_invalid_, p, out.outputs, backend_, config, dev_.ordinal);
    return r;
  }

  json measure(const json& req) {
    // A cuda point is timed only by its bench: after a failed prepare there is none, and the
    // cpu timer must not stand in for it.
    if (backend_ == Backend::cuda && !bench_)
      throw Error("worker: measure on the cuda backend without a bench (its prepare failed, or none was made: protocol error)");
    const Prepared& p = need_point();
    const Params config = params_from_json(req.at("config"), "config");
    const StopRule rule = stop_rule_from_json(req.at("rule"));
    const double incumbent = req.value("incumbent_us", 0.0);
    const std::vector<double> prior = req.value("prior_us", std::vector<double>{});
    const std::string prior_timer = req.value("prior_timer", "");
    json r = {{"status", "ok"}};
    TimedRun run;
    if (backend_ == Backend::cpu) {
      CpuTimer t(p, config, dev_.threads);
      run = sample_one_timer([&] { return TimedSample{t.sample_us(), host_timer_}; }, rule, incumbent, prior,
                             prior_timer);
      r["batch"] = t.batch();
    } else {
      bench_->set_config(config);
      const StatedRun sr = sample_with_gpu_state([&] { return bench_->sample(); }, [&] { return read_gpu_state(pci_); },
                                                 rule, incumbent, prior, prior_timer);
      run = sr.run;
      const GpuState& before = sr.before;
      const GpuState& after = sr.after;
      r["batch"] = bench_->batch();
      r["kernels"] = bench_->kernels_per_call();
      r["kernel_attrs"] = bench_->kernel_attributes();
      r["gpu"] = {{"before", to_json(before)}, {"after", to_json(after)}};
      std::string note = bench_->note();
      const std::string throttled = throttle_note(before, after);
      if (!throttled.empty()) {
        r["throttled"] = true;
        note += (note.empty() ? "" : "; ") + throttled;
      }
      if (!before.ok) note += (note.empty() ? "" : "; ") + before.why_not;
      if (!note.empty()) r["note"] = note;
    }
    if (const int calls = req.value("graph_calls", 0); calls > 0) r["graph"] = graph_measure(calls, rule);
    r["timer"] = run.timer;
    // The candidate's earlier samples were taken by another timer: they are void, these replace them.
    if (run.restarted) r["restarted"] = true;
    // 0.1 ns is far below any timer's resolution: shorter journal lines, no information lost.
    for (double& x : run.samples_us) x = std::round(x * 1e4) / 1e4;
    r["samples_us"] = run.samples_us;
    r["reason"] = stop_reason_name(run.reason);
    r["measure_s"] = run.elapsed_s;
    return r;
  }

  // The same config again as engines run it: `calls` calls in one CUDA graph, per call. Judged
  // on its own samples (no incumbent: it ranks nothing); a backend without graphs, or a call
  // that cannot be captured, says why instead of giving a number.
  json graph_measure(int calls, const StopRule& rule) {
    json g = {{"calls", calls}};
    if (const std::string why = graph_timing_unavailable(backend_); !why.empty()) {
      g["status"] = kGraphNotApplicable;
      g["reason"] = why;
      return g;
    }
    if (const std::string why = bench_->capture_calls(calls); !why.empty()) {
      g["status"] = kGraphNotCapturable;
      g["reason"] = why;
      return g;
    }
    StopRule own = rule;
    own.early_stop_ratio = 0;
    SampleRun run = sample_until([&] { return bench_->graph_call_sample().us; }, own, 0);
    for (double& x : run.samples_us) x = std::round(x * 1e4) / 1e4;
    g["status"] = kGraphOk;
    g["timer"] = "graph";
    g["samples_us"] = run.samples_us;
    g["stop_reason"] = stop_reason_name(run.reason);
    return g;
  }

  const FamilyResolver& resolve_;
  std::string host_timer_;
  const FamilyDesc* family_ = nullptr;
  Backend backend_ = Backend::cpu;
  int threads_ = 0;
  DeviceInfo dev_;
  Params problem_;
  InputOptions opt_;
  std::optional<Tensor> replay_;
  std::unique_ptr<Prepared> point_, vcache_;
  std::uint64_t vseed_ = 0;
  CuptiKernelTimer* cupti_ = nullptr;  // the worker's own hold (see hold_cupti)
  std::unique_ptr<CudaBench> bench_;
  std::string pci_;
  std::string save_invalid_;  // --save-invalid DIR
};

}  // namespace

int worker_main(int in_fd, int out_fd, const FamilyResolver& resolve, const std::string& host_timer) {
  Worker w(resolve, host_timer);
  LineReader in(in_fd);
  std::string line;
  while (in.next(line)) {
    json resp;
    bool fatal = false;
    try {
      const json req = parse_line(line, "worker request");
      if (req.value("op", "") == "exit") return 0;
      resp = w.handle(req);
      fatal = resp.value("fatal", false);
    } catch (const std::exception& e) {
      resp = {{"ok", false}, {"status", "failed"}, {"error", e.what()}};
    }
    if (!write_line(out_fd, resp.dump(-1, ' ', false, json::error_handler_t::replace))) return 1;
    if (fatal) return 3;
  }
  return 0;
}

}  // namespace moe::tuner
