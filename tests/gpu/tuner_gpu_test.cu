// The tuner's cuda measurement path on a real device: copy-bandwidth probe, CUPTI kernel
// time vs CUDA events, the L2 flush, CUDA-graph batches (and the fallback when capture is
// refused), sticky-error and hang isolation in worker processes, and a whole cuda sweep.
// Every test skips where no GPU is visible. A test-only family "gscale" (out = x * alpha)
// provides kernels with known behaviour, including ones that fault, spin or launch twice.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "require_gpu.hpp"
#include "common/rng.hpp"
#include "common/validate.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/measure/cupti_timer.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/measure/timer_cuda.hpp"
#include "tuner/run/worker.hpp"
#include "tuner/run/worker_process.hpp"
#include "tuner/search/layer_units.hpp"

using namespace moe;
using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

__global__ void scale_kernel(const float* x, float* y, float a, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = x[i] * a;
}

__device__ int g_never_set = 0;

__global__ void spin_kernel() {
  while (*static_cast<volatile int*>(&g_never_set) == 0) {
  }
}

__global__ void fault_kernel(float* bad) { bad[threadIdx.x] = 1.0f; }

void run_cuda(const Params& p, const Params& c, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const long long n = p.i("tokens") * p.i("width");
  const int block = static_cast<int>(c.i("block"));
  const int grid = static_cast<int>(std::min<long long>((n + block - 1) / block, 65535));
  const std::string& behave = c.s("behave");
  const float* x = need(in, "x").as<const float>();
  float* y = need(out, "out").as<float>();
  const float a = static_cast<float>(p.f("alpha"));
  if (behave == "illegal") {
    fault_kernel<<<1, 32, 0, stream>>>(reinterpret_cast<float*>(16));
  } else if (behave == "spin") {
    spin_kernel<<<1, 1, 0, stream>>>();
  } else if (behave == "sync") {
    scale_kernel<<<grid, block, 0, stream>>>(x, y, a, n);
    cuda_check(cudaDeviceSynchronize(), "gscale sync");  // not allowed while a graph is captured
  } else {
    scale_kernel<<<grid, block, 0, stream>>>(x, y, a, n);
    if (behave == "two") scale_kernel<<<grid, block, 0, stream>>>(x, y, a, n);
  }
  cuda_check(cudaGetLastError(), "gscale launch");
}

const FamilyDesc& gscale_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "gscale";
    f.summary = "gpu test family: out = x * alpha";
    ParamSpec alpha;
    alpha.name = "alpha";
    alpha.kind = ParamKind::Float;
    alpha.default_value = 0.75;
    f.problem_params = {int_param("tokens", 64, 1, 1 << 20, "rows"),
                        choice_param("dtype", "f32", {"f32"}, "element type"),
                        int_param("width", 1024, 1, 1 << 20, "columns"), alpha};
    f.input_specs = [](const Params& p) {
      return std::vector<TensorSpec>{{"x", DType::f32, {p.i("tokens"), p.i("width")}, ""}};
    };
    f.make_inputs = [](const Params& p, const InputOptions& o, TensorMap& m) {
      Rng rng(o.seed + 17);
      Tensor x(DType::f32, {p.i("tokens"), p.i("width")});
      for (std::int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(rng.normal());
      m.emplace("x", std::move(x));
    };
    f.output_specs = [](const Params& p, const TensorMap&) {
      return std::vector<TensorSpec>{{"out", DType::f32, {p.i("tokens"), p.i("width")}, ""}};
    };
    f.reference = [](const Params& p, const TensorMap& in, TensorMap& out) {
      const float* x = in.at("x").data<float>();
      float* y = out.at("out").data<float>();
      for (std::int64_t i = 0; i < in.at("x").numel(); ++i) y[i] = static_cast<float>(x[i] * p.f("alpha"));
    };
    f.validate = [](const Params&, const TensorMap&, const TensorMap& got, const TensorMap& ref) {
      return make_validation({compare_close("out", got.at("out"), ref.at("out"), 1e-6, 1e-6, 0)});
    };
    f.cost = [](const Params& p, const TensorMap&) {
      const double n = static_cast<double>(p.i("tokens") * p.i("width"));
      return Cost{8 * n, n};
    };
    BackendImpl b;
    b.backend = Backend::cuda;
    b.config_params = {int_param("block", 256, 32, 1024, "threads per block"),
                       choice_param("behave", "normal", {"normal", "two", "illegal", "spin", "sync"},
                                    "how the candidate misbehaves, if at all")};
    b.space = [](const Params&, const DeviceInfo&, bool) {
      std::vector<Params> s;
      for (std::int64_t blk : {64, 128, 256, 512})
        s.push_back(Params{{"block", blk}, {"behave", std::string("normal")}});
      return s;
    };
    b.default_config = [](const Params&, const DeviceInfo&) {
      return Params{{"block", std::int64_t{256}}, {"behave", std::string("normal")}};
    };
    b.invalid_reason = [](const Params&, const Params&, const DeviceInfo&) { return std::string(); };
    b.run = run_cuda;
    f.backends.push_back(std::move(b));
    return f;
  }();
  return d;
}

const FamilyResolver& gpu_families() {
  static const FamilyResolver r = [](const std::string& n) -> const FamilyDesc& {
    return n == "gscale" ? gscale_family() : moe::family(n);
  };
  return r;
}


Params problem(std::int64_t tokens, std::int64_t width) {
  return complete(gscale_family().problem_params, Params{{"tokens", tokens}, {"width", width}}, "gscale");
}

Params config(std::int64_t block, const char* behave) {
  return Params{{"block", block}, {"behave", std::string(behave)}};
}

double median_of(CudaBench& b, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(b.sample().us);
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Workers must be fresh processes (CUDA does not survive fork): this binary re-executed with a
// filter that runs only the worker "test" below, which serves requests when asked to.
constexpr const char* kWorkerFlag = "--moebench-gpu-test-worker";

WorkerLaunch self_worker() {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  return WorkerLaunch{{exe, "--gtest_filter=TunerGpuWorkerChild.Serve", kWorkerFlag}, {}};
}

bool started_as_worker() {
  for (auto& a : ::testing::internal::GetArgvs())
    if (a == kWorkerFlag) return true;
  return false;
}

}  // namespace

TEST(TunerGpuWorkerChild, Serve) {
  if (!started_as_worker()) GTEST_SKIP() << "runs only as a worker process of the tests below";
  std::fflush(stdout);
  ::_exit(worker_main(0, 3, gpu_families()));
}

TEST(TunerGpu, CopyBandwidthProbe) {
  REQUIRE_GPU();
  const double gbps = cuda_copy_bandwidth_gbps(0);
  // HBM3 on an H100/H200 copies at 2-4 TB/s (read + write); anything far outside is a unit bug.
  EXPECT_GT(gbps, 300);
  EXPECT_LT(gbps, 20000);
  std::printf("copy bandwidth %.0f GB/s\n", gbps);
}

TEST(TunerGpu, ColdModeCuptiAgainstEvents) {
  REQUIRE_GPU();
  const Prepared p = prepare(gscale_family(), problem(4096, 4096), InputOptions{});  // 64 MiB in, 64 MiB out
  const DeviceInfo dev = cuda_device_info(0);
  std::string why;
  const bool have_cupti = CuptiKernelTimer::get(&why) != nullptr;
  CudaBench cupti(p, dev, TimerMode::cold, true);
  cupti.set_config(config(256, "normal"));
  const double t_cupti = median_of(cupti, 30);
  if (have_cupti) {
    EXPECT_EQ(cupti.timer(), "cupti") << cupti.note();
    EXPECT_EQ(cupti.kernels_per_call(), 1);
  } else {
    std::printf("CUPTI unavailable: %s\n", why.c_str());
    EXPECT_NE(cupti.note().find("CUPTI unavailable"), std::string::npos);
  }
  CudaBench events(p, dev, TimerMode::cold, false);
  events.set_config(config(256, "normal"));
  const double t_events = median_of(events, 30);
  EXPECT_EQ(events.timer(), "events");
  // 128 MiB through HBM: tens of microseconds, not nanoseconds or seconds.
  const double bytes = 8.0 * 4096 * 4096;
  for (double t : {t_cupti, t_events}) {
    EXPECT_GT(t, 10.0);
    EXPECT_LT(t, 5000.0);
    EXPECT_LT(bytes / (t * 1e-6) / 1e9, 10000.0);  // below any HBM's bandwidth
  }
  // Events also count the launch; CUPTI only the kernel.
  EXPECT_GE(t_events, 0.9 * t_cupti);
  std::printf("cupti %.2f us, events %.2f us\n", t_cupti, t_events);
}

TEST(TunerGpu, CuptiCountsEveryKernelOfACall) {
  REQUIRE_GPU();
  std::string why;
  if (!CuptiKernelTimer::get(&why)) GTEST_SKIP() << why;
  // 64 MiB of input, more than any L2: the second kernel of "two" streams from HBM again.
  const Prepared p = prepare(gscale_family(), problem(4096, 4096), InputOptions{});
  CudaBench b(p, cuda_device_info(0), TimerMode::cold, true);
  b.set_config(config(256, "normal"));
  const double one = median_of(b, 20);
  EXPECT_EQ(b.kernels_per_call(), 1);
  b.set_config(config(256, "two"));
  const double two = median_of(b, 20);
  EXPECT_EQ(b.kernels_per_call(), 2);
  EXPECT_GT(two, 1.5 * one);
}

TEST(TunerGpu, L2FlushMakesAnL2SizedProblemSlowerThanHot) {
  REQUIRE_GPU();
  const DeviceInfo dev = cuda_device_info(0);
  // In + out = a quarter of L2: a hot call reads its input from L2, a cold one from HBM.
  const std::int64_t width = 1024, tokens = std::max<std::int64_t>(16, static_cast<std::int64_t>(dev.l2_bytes / 4 / 8 / width));
  const Prepared p = prepare(gscale_family(), problem(tokens, width), InputOptions{});
  CudaBench cold(p, dev, TimerMode::cold, false);
  cold.set_config(config(256, "normal"));
  CudaBench hot(p, dev, TimerMode::hot, false);
  hot.set_config(config(256, "normal"));
  EXPECT_EQ(hot.timer(), "events");  // nothing sampled yet
  const double t_cold = median_of(cold, 30), t_hot = median_of(hot, 30);
  EXPECT_EQ(hot.timer(), "graph") << hot.note();
  EXPECT_GE(hot.batch(), 1);
  EXPECT_LE(hot.batch(), 200);
  EXPECT_GT(t_cold, t_hot) << "cold " << t_cold << " us, hot " << t_hot << " us";
  std::printf("L2-sized problem (%lld x %lld): cold %.2f us, hot %.2f us (graph batch %d)\n",
              static_cast<long long>(tokens), static_cast<long long>(width), t_cold, t_hot, hot.batch());
}

TEST(TunerGpu, GraphCaptureRefusedFallsBackToALaunchLoop) {
  REQUIRE_GPU();
  const Prepared p = prepare(gscale_family(), problem(256, 1024), InputOptions{});
  CudaBench hot(p, cuda_device_info(0), TimerMode::hot, false);
  hot.set_config(config(256, "sync"));
  const double t = median_of(hot, 10);
  EXPECT_GT(t, 0);
  EXPECT_EQ(hot.timer(), "events-loop");
  EXPECT_NE(hot.note().find("graph capture refused"), std::string::npos) << hot.note();
  // The device is fine afterwards.
  EXPECT_EQ(cuda_sticky_error(0), "");
  hot.set_config(config(128, "normal"));
  EXPECT_GT(median_of(hot, 10), 0);
  EXPECT_EQ(hot.timer(), "graph");
}

TEST(TunerGpu, WorkerIsolatesStickyErrorsAndHangs) {
  REQUIRE_GPU();
  WorkerProcess w(self_worker());
  const json prep = {{"op", "prepare"}, {"family", "gscale"}, {"backend", "cuda"}, {"device", 0},
                     {"problem", {{"tokens", 512}, {"width", 1024}, {"dtype", "f32"}, {"alpha", 0.75}}},
                     {"seed", 3}, {"timer", "cold"}, {"cupti", true}};
  Reply r = w.call({{"op", "probe"}, {"backend", "cuda"}, {"device", 0}}, 120);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_GT(r.body.value("copy_gbps", 0.0), 300);
  r = w.call(prep, 120);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  ASSERT_TRUE(r.body.value("ok", false)) << r.body.dump();
  r = w.call({{"op", "validate"}, {"config", {{"block", 128}, {"behave", "normal"}}}, {"seed", 9}}, 60);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
  StopRule rule;
  rule.min_samples = 10;
  rule.min_time_s = 0;
  rule.max_time_s = 0.5;
  r = w.call({{"op", "measure"}, {"config", {{"block", 128}, {"behave", "normal"}}}, {"rule", to_json(rule)}}, 60);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
  EXPECT_GE(r.body["samples_us"].size(), 10u);
  // An illegal address is sticky: reported as crashed, and the worker exits.
  r = w.call({{"op", "validate"}, {"config", {{"block", 128}, {"behave", "illegal"}}}, {"seed", 9}}, 60);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  EXPECT_EQ(r.body.value("status", ""), "crashed") << r.body.dump();
  EXPECT_TRUE(r.body.value("fatal", false));
  EXPECT_NE(r.body.value("error", "").find("sticky"), std::string::npos);
  w.kill();
  // A fresh worker serves again; a spinning kernel is killed by the watchdog.
  r = w.call(prep, 120);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  r = w.call({{"op", "validate"}, {"config", {{"block", 128}, {"behave", "spin"}}}, {"seed", 9}}, 3);
  EXPECT_EQ(r.kind, Reply::timeout);
  r = w.call(prep, 120);
  ASSERT_EQ(r.kind, Reply::ok) << r.error;
  r = w.call({{"op", "validate"}, {"config", {{"block", 256}, {"behave", "normal"}}}, {"seed", 9}}, 60);
  EXPECT_EQ(r.body.value("status", ""), "ok") << r.body.dump();
}

TEST(TunerGpu, CudaSweepReportsPeakTimerAndTables) {
  REQUIRE_GPU();
  const fs::path d = fs::temp_directory_path() / ("moebench-gpu-sweep-" + std::to_string(::getpid()));
  fs::remove_all(d);
  SweepOptions o;
  o.units = {{&gscale_family(), problem(64, 4096)}};
  o.tokens = {64, 4096};
  o.backend = Backend::cuda;
  o.devices = {0};
  o.out_dir = (d / "out").string();
  o.tables_dir = (d / "tables").string();
  o.rule.min_samples = 10;
  o.rule.min_time_s = 1e-3;
  o.rule.max_time_s = 0.5;
  o.watchdog_s = 20;
  o.launch = self_worker();
  o.progress = ProgressMode::quiet;
  o.handle_signals = false;
  const SweepOutcome out = run_sweep(o);
  const json& meta = out.results["meta"];
  EXPECT_GT(meta["copy_bw_gbps"].get<double>(), 300);
  EXPECT_EQ(meta["timer"]["mode"], "cold");
  const std::string used = meta["timer"]["used"];
  EXPECT_TRUE(used == "cupti" || used == "events") << used;
  ASSERT_EQ(out.results["records"].size(), 8u);
  for (auto& r : out.results["records"]) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_GT(r["pct_peak"].get<double>(), 0.1);
    EXPECT_LT(r["pct_peak"].get<double>(), 150);
  }
  ASSERT_EQ(out.tables.size(), 1u);
  EXPECT_NE(out.tables[0].find(runtime::device_slug(cuda_device_info(0))), std::string::npos);
  std::printf("%s\n", out.summary_md.c_str());
  fs::remove_all(d);
}

// The layer's sweep times every layer candidate alone and again as engines run it (10 calls in
// one CUDA graph), pdl=1 and pdl=0: each record carries both, and the summary shows them side by side.
TEST(TunerGpu, LayerSweepTimesEachCandidateAloneAndInAGraph) {
  REQUIRE_GPU();
  const fs::path d = fs::temp_directory_path() / ("moebench-gpu-layer-graph-" + std::to_string(::getpid()));
  fs::remove_all(d);
  const Params L = complete(family("moe-layer").problem_params,
                            Params{{"experts", std::int64_t{16}}, {"topk", std::int64_t{4}}, {"shared", std::int64_t{1}},
                                   {"hidden", std::int64_t{256}}, {"intermediate", std::int64_t{128}},
                                   {"align", std::int64_t{16}}, {"tokens", std::int64_t{1}}},
                            "layer");
  std::vector<std::string> warnings;
  SweepOptions o;
  o.units = layer_units(L, {}, Backend::cuda, warnings);
  o.tokens = {1, 16};
  o.backend = Backend::cuda;
  o.devices = {0};
  o.budget.candidates = 1;
  o.graph_calls = 10;
  o.out_dir = (d / "out").string();
  o.tables_dir = (d / "tables").string();
  o.rule.min_samples = 5;
  o.rule.min_time_s = 1e-3;
  o.rule.max_time_s = 0.2;
  o.watchdog_s = 30;
  o.launch = self_worker();
  o.progress = ProgressMode::quiet;
  o.handle_signals = false;
  const SweepOutcome out = run_sweep(o);
  int graphed = 0;
  for (auto& r : out.results["records"]) {
    if (r["kernel"] != "moe-layer") {
      EXPECT_FALSE(r.contains("graph")) << r["kernel"];
      continue;
    }
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["timing"], "alone");
    const json& g = r["graph"];
    EXPECT_EQ(g["status"], "ok") << g.dump();
    EXPECT_EQ(g["graph_calls"], 10);
    EXPECT_EQ(g["timer"], "graph");
    EXPECT_GT(g["stats"]["median_us"].get<double>(), 0.0);
    ++graphed;
  }
  EXPECT_GE(graphed, 4);  // per token count: auto with pdl=1 and pdl=0, both paths (and the defaults' baseline)
  EXPECT_NE(out.summary_md.find("| 1 | stages | auto (the tuned stages) | 0 | "), std::string::npos) << out.summary_md;
  // One token: the decode front is a candidate too, with and without pdl.
  EXPECT_NE(out.summary_md.find("| 1 | decode | auto (the tuned stages) | 1 | "), std::string::npos) << out.summary_md;
  EXPECT_NE(out.summary_md.find("| 1 | decode | auto (the tuned stages) | 0 | "), std::string::npos) << out.summary_md;
  std::printf("%s\n", out.summary_md.c_str());
  fs::remove_all(d);
}
