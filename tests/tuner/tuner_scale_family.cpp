#include "tuner_scale_family.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "common/parallel.hpp"
#include "common/rng.hpp"
#include "common/validate.hpp"
#include "moe/error.hpp"

namespace moe::testing {

namespace {

// True once the sweep (this worker's parent) has taken delivery of SIGINT: its handler has
// counted the interrupt, so the candidate may finish without racing the handler.
bool sigint_delivered(pid_t sweep) {
  std::ifstream status("/proc/" + std::to_string(sweep) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("ShdPnd:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGINT - 1))) == 0;
  return true;  // the sweep is gone
}

// behave=signal: the first candidate of the whole test to get here sends the sweep the
// problem's signal, from inside the candidate, so a test can stop a sweep at an exact point
// without timing. The marker file named by MOEBENCH_TEST_SIGNAL_ONCE records that it happened:
// later candidates, and the resumed sweep, run normally.
void signal_sweep_once(const std::string& which) {
  const char* mark = std::getenv("MOEBENCH_TEST_SIGNAL_ONCE");
  if (!mark) throw Error("scale: behave=signal needs MOEBENCH_TEST_SIGNAL_ONCE, the path of a marker file");
  const int fd = ::open(mark, O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) return;
  ::close(fd);
  const pid_t sweep = ::getppid();
  if (which == "kill") {
    ::kill(sweep, SIGKILL);
    for (;;) ::pause();  // the worker dies with the sweep (PR_SET_PDEATHSIG)
  }
  ::kill(sweep, SIGINT);
  for (int i = 0; i < 5000 && !sigint_delivered(sweep); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void run_cpu(const Params& problem, const Params& config, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  const std::int64_t T = problem.i("tokens"), W = problem.i("width"), tile = config.i("tile");
  const double alpha = problem.f("alpha");
  const std::string& behave = config.s("behave");
  if (behave == "abort") std::abort();
  if (behave == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (behave == "throw") throw Error("scale: deliberate failure of config behave=throw");
  if (behave == "signal") signal_sweep_once(problem.s("signal"));
  const float* x = need(in, "x").as<float>();
  float* y = need(out, "out").as<float>();
  const float a = static_cast<float>(alpha) * (behave == "wrong" ? 1.01f : 1.0f);
  const int reps = behave == "slow" ? 8 : 1;
  parallel_for(T, ctx.threads, 1, [&](std::int64_t b, std::int64_t e) {
    for (int r = 0; r < reps; ++r)
      for (std::int64_t t = b; t < e; ++t)
        for (std::int64_t c0 = 0; c0 < W; c0 += tile)
          for (std::int64_t c = c0; c < std::min(W, c0 + tile); ++c) y[t * W + c] = x[t * W + c] * a;
  });
}

}  // namespace

const FamilyDesc& scale_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "scale";
    f.summary = "test family: out = x * alpha";
    f.problem_params = {int_param("tokens", 64, 1, 1 << 20, "rows"),
                        choice_param("dtype", "f32", {"f32"}, "element type"),
                        int_param("width", 64, 1, 1 << 16, "columns"),
                        int_param("faults", 0, 0, 1, "1: the space holds misbehaving configs"),
                        choice_param("signal", "none", {"none", "kill", "interrupt"},
                                     "kill|interrupt: every config but the default signals the sweep (once)")};
    ParamSpec alpha;
    alpha.name = "alpha";
    alpha.kind = ParamKind::Float;
    alpha.default_value = 1.5;
    f.problem_params.push_back(alpha);
    f.check_problem = [](const Params& p) {
      if (p.i("width") == 13) throw Error("scale: width 13 is unlucky (a test of skipped points)");
    };
    f.input_specs = [](const Params& p) {
      return std::vector<TensorSpec>{{"x", DType::f32, {p.i("tokens"), p.i("width")}, "input"}};
    };
    f.make_inputs = [](const Params& p, const InputOptions& o, TensorMap& m) {
      if (m.count("x")) return;
      Rng rng(o.seed * 7919 + 1);
      Tensor x(DType::f32, {p.i("tokens"), p.i("width")});
      for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, rng.normal());
      m.emplace("x", std::move(x));
    };
    f.output_specs = [](const Params& p, const TensorMap&) {
      return std::vector<TensorSpec>{{"out", DType::f32, {p.i("tokens"), p.i("width")}, "x * alpha"}};
    };
    f.reference = [](const Params& p, const TensorMap& in, TensorMap& out) {
      const Tensor& x = in.at("x");
      Tensor& y = out.at("out");
      for (std::int64_t i = 0; i < x.numel(); ++i) y.set(i, static_cast<double>(x.get(i)) * p.f("alpha"));
    };
    f.validate = [](const Params&, const TensorMap&, const TensorMap& got, const TensorMap& ref) {
      return make_validation({compare_close("out", got.at("out"), ref.at("out"), 1e-6, 1e-5, 1e-6)});
    };
    f.cost = [](const Params& p, const TensorMap&) {
      const double n = static_cast<double>(p.i("tokens") * p.i("width"));
      return Cost{8 * n, n};
    };
    BackendImpl cpu;
    cpu.backend = Backend::cpu;
    cpu.config_params = {int_param("tile", 16, 1, 4096, "rows per task"),
                         choice_param("behave", "normal", {"normal", "abort", "hang", "throw", "wrong", "slow", "signal"},
                                      "how the candidate misbehaves, if at all")};
    cpu.space = [](const Params& p, const DeviceInfo&, bool full) {
      std::vector<Params> s;
      const bool signal = p.s("signal") != "none";
      for (std::int64_t t : {4, 16, 64, 256})
        s.push_back(Params{{"tile", t}, {"behave", std::string(signal && t != 16 ? "signal" : "normal")}});
      if (full) s.push_back(Params{{"tile", std::int64_t{1024}}, {"behave", std::string("normal")}});
      if (p.i("faults"))
        for (const char* b : {"abort", "hang", "throw", "wrong", "slow"})
          s.push_back(Params{{"tile", std::int64_t{16}}, {"behave", std::string(b)}});
      return s;
    };
    cpu.default_config = [](const Params&, const DeviceInfo&) {
      return Params{{"tile", std::int64_t{16}}, {"behave", std::string("normal")}};
    };
    cpu.invalid_reason = [](const Params& p, const Params& c, const DeviceInfo&) -> std::string {
      if (c.i("tile") > p.i("width") * 4) return "tile is more than 4x the width";
      return "";
    };
    cpu.run = run_cpu;
    f.backends.push_back(std::move(cpu));
    return f;
  }();
  return d;
}

const tuner::FamilyResolver& test_families() {
  static const tuner::FamilyResolver r = [](const std::string& n) -> const FamilyDesc& {
    return n == "scale" ? scale_family() : moe::family(n);
  };
  return r;
}

}  // namespace moe::testing
