#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/host_wait.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "tuner/measure/cold_timer.hpp"
#include "tuner/measure/cuda_event.hpp"
#include "tuner/measure/cupti_timer.hpp"
#include "tuner/measure/device_tensors.hpp"
#include "tuner/measure/timer_cuda.hpp"

namespace moe::tuner {

namespace {

struct Stream {
  cudaStream_t s = nullptr;
  // A blocking stream: a backend that touches the legacy default stream still orders with it.
  Stream() { cuda_check(cudaStreamCreate(&s), "cudaStreamCreate"); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

// The L2 flush: reads every line of a buffer twice the L2 (a memset would leave dirty lines to
// be written back during the timed kernel). The sum is stored only when it equals a value the
// buffer never produces, so the reads are not optimised away and nothing is written. Launched
// directly, not through the counting launch API: it is not one of the call's kernels.
__global__ void l2_flush_read(const uint4* __restrict__ p, std::size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

void flush_l2(const DeviceBuffer& buf, cudaStream_t s, int sms) {
  const std::size_t n = buf.size() / sizeof(uint4);
  auto* sink = reinterpret_cast<unsigned*>(static_cast<char*>(buf.get()) + n * sizeof(uint4) - sizeof(uint4));
  l2_flush_read<<<static_cast<unsigned>(std::max(sms, 1) * 4), 512, 0, s>>>(static_cast<const uint4*>(buf.get()), n,
                                                                             sink);
  cuda_check(cudaGetLastError(), "L2 flush kernel");
}

// Before a point's first sample the clocks may have dropped during seconds of host work.
constexpr double kClockWarmupS = 0.15;

struct Graph {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  void reset() {
    if (exec) cudaGraphExecDestroy(exec);
    if (g) cudaGraphDestroy(g);
    exec = nullptr;
    g = nullptr;
  }
  ~Graph() { reset(); }
};

}  // namespace

struct CudaBench::Impl {
  const Prepared& p;
  const BackendImpl& impl;
  DeviceInfo dev;
  TimerMode mode;
  CuptiKernelTimer* cupti = nullptr;  // held from construction to destruction
  std::string base_note;  // of the whole bench: CUPTI unavailable or disabled
  std::string note;       // of the current config: base_note plus what happened to it
  ColdTimer cold{nullptr, ""};
  bool clocks_warm = false;  // once per bench, i.e. per point
  DeviceTensors in, out;
  RefMap in_refs, out_refs;
  DeviceBuffer flush, ws;
  Stream stream;
  Event start, stop;
  Graph graph;
  Graph calls_graph;     // capture_calls's: the engine's view of a call
  int graph_calls = 0;   // calls in calls_graph; 0: none captured
  Params config;
  std::shared_ptr<const LaunchPlan> plan;  // made once per config: timed calls only launch
  int launched = 0;                        // kernels one call launched (counted at the warm-up)
  std::vector<LaunchRecord> launches;      // what they were
  bool have_config = false;
  bool graph_ok = false;
  int batch = 1;
  int sms = 0;
  std::string last_timer = "events";

  Impl(const Prepared& prep, const DeviceInfo& d, TimerMode m)
      : p(prep), impl(prep.family->need_backend(Backend::cuda)), dev(d), mode(m) {}

  LaunchContext context() const {
    LaunchContext ctx;
    ctx.stream = stream.s;
    ctx.workspace = ws.get();
    ctx.workspace_bytes = ws.size();
    ctx.plan = plan.get();
    return ctx;
  }

  void run() {
    impl.run(p.problem, config, in_refs, out_refs, context());
    cuda_check(cudaGetLastError(), (p.family->name + " kernel launch").c_str());
  }

  float events_ms() {
    cuda_check(cudaEventSynchronize(stop.e), (p.family->name + " kernel").c_str());
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    return ms;
  }

  // `n` calls captured into `into`: "" when it is instantiated, else why not (then `into` is empty).
  std::string capture_into(Graph& into, int n) {
    into.reset();
    cuda_check(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    std::string why;
    try {
      for (int i = 0; i < n; ++i) impl.run(p.problem, config, in_refs, out_refs, context());
    } catch (const std::exception& e) {
      why = e.what();
    }
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream.s, &g);
    into.g = g;
    if (why.empty() && end != cudaSuccess) why = cudaGetErrorName(end);
    if (why.empty() && g) {
      const cudaError_t inst = cudaGraphInstantiate(&into.exec, g, 0);
      if (inst != cudaSuccess) why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(inst);
    }
    if (!why.empty() || !into.exec) {
      cudaGetLastError();  // capture failures are not sticky; clear them
      into.reset();
      return why.empty() ? std::string("no graph") : why;
    }
    return "";
  }

  void capture() {
    graph_ok = false;
    const std::string why = capture_into(graph, batch);
    if (!why.empty()) {
      note = "graph capture refused (" + why + "): hot mode times a launch loop";
      return;
    }
    graph_ok = true;
    cuda_check(cudaGraphLaunch(graph.exec, stream.s), "cudaGraphLaunch (warm-up)");
    cuda_check(cudaStreamSynchronize(stream.s), "graph warm-up");
  }
};

CudaBench::CudaBench(const Prepared& p, const DeviceInfo& dev, TimerMode mode, bool use_cupti) {
  require_cuda_device(dev.ordinal);
  cuda_check(cudaSetDevice(dev.ordinal), "cudaSetDevice");
  d_ = std::make_unique<Impl>(p, dev, mode);
  d_->in = DeviceTensors::upload(p.inputs);
  d_->out = DeviceTensors::alloc(p.output_specs);
  d_->in_refs = d_->in.refs();
  d_->out_refs = d_->out.refs();
  if (mode == TimerMode::cold) {
    d_->flush = DeviceBuffer(l2_flush_bytes(dev.l2_bytes));
    if (use_cupti) {
      std::string why;
      d_->cupti = CuptiKernelTimer::get(&why);
      if (!d_->cupti) d_->base_note = "CUPTI unavailable (" + why + "): timed with CUDA events, launch overhead included";
      else d_->cupti->acquire();
    } else {
      d_->base_note = "CUPTI disabled: timed with CUDA events, launch overhead included";
    }
  }
  d_->note = d_->base_note;
  d_->cold = ColdTimer(d_->cupti, d_->base_note, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
  d_->sms = dev.sm_count;
}

CudaBench::~CudaBench() {
  if (d_ && d_->cupti) {
    cudaDeviceSynchronize();  // nothing may run while collection could be switched off
    d_->cupti->release();
  }
}

void CudaBench::set_config(const Params& config) {
  Impl& d = *d_;
  d.graph.reset();
  d.calls_graph.reset();
  d.graph_calls = 0;
  d.note = d.base_note;  // a refused capture or a kernel CUPTI missed is this config's, not the next's
  d.config = config;
  d.have_config = true;
  d.plan.reset();
  const std::size_t wsb = d.impl.workspace_bytes ? d.impl.workspace_bytes(d.p.problem, config) : 0;
  if (wsb > d.ws.size()) d.ws = DeviceBuffer(wsb);
  if (d.impl.plan) d.plan = d.impl.plan(d.p.problem, config, d.in_refs);
  const std::uint64_t before = kernel_launches();
  d.launches.clear();
  record_launches(&d.launches);
  try {
    d.run();  // warm-up: module load, first-touch, the launch count
  } catch (...) {
    record_launches(nullptr);
    throw;
  }
  record_launches(nullptr);
  d.launched = static_cast<int>(kernel_launches() - before);
  if (d.plan && d.plan->kernels >= 0 && d.plan->kernels != d.launched)  // < 0: the plan does not know
    throw Error(d.p.family->name + ": the launch plan says " + std::to_string(d.plan->kernels) +
                " kernels per call, the call launched " + std::to_string(d.launched));
  cuda_check(cudaStreamSynchronize(d.stream.s), (d.p.family->name + " warm-up").c_str());
  d.cold.set_config(d.launched);
  if (!d.clocks_warm) {
    warm_clocks(
        [&] {
          const auto t0 = std::chrono::steady_clock::now();
          d.run();
          cuda_check(cudaStreamSynchronize(d.stream.s), (d.p.family->name + " clock warm-up").c_str());
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        kClockWarmupS);
    d.clocks_warm = true;
  }
  if (d.mode == TimerMode::hot) {
    cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
    d.run();
    cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
    const double call_us = d.events_ms() * 1e3;
    d.batch = graph_batch_size(call_us);
    d.capture();
  }
}

TimedSample CudaBench::sample() {
  Impl& d = *d_;
  if (!d.have_config) throw Error("CudaBench::sample before set_config");
  TimedSample t;
  if (d.mode == TimerMode::hot) {
    cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
    if (d.graph_ok) {
      cuda_check(cudaGraphLaunch(d.graph.exec, d.stream.s), "cudaGraphLaunch");
    } else {
      for (int i = 0; i < d.batch; ++i) d.run();
    }
    cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
    t = {d.events_ms() * 1e3 / d.batch, d.graph_ok ? "graph" : "events-loop"};
  } else if (waits_on_host(d.plan.get())) {
    // A call that waits on the host partway: CUPTI's kernel durations would leave the wait out.
    flush_l2(d.flush, d.stream.s, d.sms);
    cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
    d.run();
    cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
    t = {d.events_ms() * 1e3, "events"};
    d.note = (d.base_note.empty() ? "" : d.base_note + "; ") +
             std::string("the call waits on the host for its row counts: timed with CUDA events, that wait included");
  } else {
    flush_l2(d.flush, d.stream.s, d.sms);
    // CUPTI's sample starts with the device idle, so the flush's own record is not the call's.
    if (d.cold.uses_cupti()) cuda_check(cudaStreamSynchronize(d.stream.s), "L2 flush");
    t = d.cold.sample([&] {
      cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
      d.run();
      cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
      return d.events_ms() * 1e3;
    });
    d.note = d.cold.note();
  }
  d.last_timer = t.timer;
  return t;
}

std::string CudaBench::capture_calls(int calls) {
  Impl& d = *d_;
  if (!d.have_config) throw Error("CudaBench::capture_calls before set_config");
  if (calls < 1) throw Error("CudaBench::capture_calls: " + std::to_string(calls) + " calls (give at least 1)");
  d.calls_graph.reset();
  d.graph_calls = 0;
  // Known before trying: such a call copies its row counts back and synchronizes its stream,
  // which a capturing stream refuses (and a graph could not replay with new counts).
  if (waits_on_host(d.plan.get()))
    return "a stage waits on the host for its row counts every call (a library that takes them as host values: "
           "kernel=cublas or kernel=cublaslt), which a CUDA graph cannot capture";
  const std::string why = d.capture_into(d.calls_graph, calls);
  if (!why.empty()) return "the call cannot be captured in a CUDA graph: " + why;
  d.graph_calls = calls;
  // vLLM's benchmark replays its graph a few times before timing it.
  for (int i = 0; i < 3; ++i) cuda_check(cudaGraphLaunch(d.calls_graph.exec, d.stream.s), "cudaGraphLaunch (warm-up)");
  cuda_check(cudaStreamSynchronize(d.stream.s), (d.p.family->name + " graph warm-up").c_str());
  return "";
}

TimedSample CudaBench::graph_call_sample() {
  Impl& d = *d_;
  if (d.graph_calls < 1) throw Error("CudaBench::graph_call_sample without a captured graph (capture_calls)");
  cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
  cuda_check(cudaGraphLaunch(d.calls_graph.exec, d.stream.s), "cudaGraphLaunch");
  cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
  return {d.events_ms() * 1e3 / d.graph_calls, "graph"};
}

Outcome CudaBench::validate(const Params& config) {
  Impl& d = *d_;
  d.graph.reset();
  d.calls_graph.reset();
  d.graph_calls = 0;
  d.have_config = false;  // the next measurement sets its config again
  d.config = config;
  const std::size_t wsb = d.impl.workspace_bytes ? d.impl.workspace_bytes(d.p.problem, config) : 0;
  if (wsb > d.ws.size()) d.ws = DeviceBuffer(wsb);
  d.plan = d.impl.plan ? d.impl.plan(d.p.problem, config, d.in_refs) : nullptr;
  d.out.poison();
  poison_workspace(d.ws.get(), d.ws.size(), d.stream.s);  // what the last call left there (harness_cuda.cu)
  Outcome o;
  cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
  d.run();
  cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
  o.times_us.push_back(d.events_ms() * 1e3);
  o.outputs = d.out.download();
  o.validation = d.p.family->validate(d.p.problem, d.p.inputs, o.outputs, d.p.reference);
  return o;
}

nlohmann::json CudaBench::kernel_attributes() const {
  nlohmann::json r = nlohmann::json::array();
  for (const LaunchRecord& l : d_->launches) {
    cudaFuncAttributes a{};
    nlohmann::json k = {{"grid", l.grid}, {"block", l.block}, {"dynamic_smem", l.smem}};
    if (cudaFuncGetAttributes(&a, l.func) == cudaSuccess) {
      k["registers"] = a.numRegs;
      k["local_bytes"] = a.localSizeBytes;
      k["static_smem"] = a.sharedSizeBytes;
      k["max_threads"] = a.maxThreadsPerBlock;
    } else {
      cudaGetLastError();
    }
    r.push_back(std::move(k));
  }
  return r;
}

std::string CudaBench::timer() const { return d_->last_timer; }
std::string CudaBench::note() const { return d_->note; }
int CudaBench::kernels_per_call() const { return d_->launched > 0 ? d_->launched : d_->cold.kernels_seen(); }
int CudaBench::batch() const { return d_->batch; }

GraphTimes time_in_graph(const Prepared& p, const Params& config, const DeviceInfo& dev, int calls, int replays) {
  CudaBench bench(p, dev, TimerMode::cold, false);
  bench.set_config(config);
  GraphTimes t;
  t.not_timed = bench.capture_calls(calls);
  if (!t.not_timed.empty()) return t;
  for (int r = 0; r < std::max(replays, 1); ++r) t.per_call_us.push_back(bench.graph_call_sample().us);
  return t;
}

double cuda_copy_bandwidth_gbps(int ordinal, int reps) {
  require_cuda_device(ordinal);
  cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
  const DeviceInfo info = cuda_device_info(ordinal);
  const std::size_t bytes = copy_probe_bytes(info.mem_bytes);
  DeviceBuffer a(bytes), b(bytes);
  cuda_check(cudaMemset(a.get(), 1, bytes), "cudaMemset");
  cuda_check(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy (warm-up)");
  Event start, stop;
  cuda_check(cudaEventRecord(start.e, nullptr), "cudaEventRecord");
  for (int r = 0; r < reps; ++r)
    cuda_check(cudaMemcpyAsync(r % 2 ? a.get() : b.get(), r % 2 ? b.get() : a.get(), bytes, cudaMemcpyDeviceToDevice,
                               nullptr),
               "cudaMemcpyAsync");
  cuda_check(cudaEventRecord(stop.e, nullptr), "cudaEventRecord");
  cuda_check(cudaEventSynchronize(stop.e), "copy-bandwidth probe");
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
  return ms > 0 ? 2.0 * static_cast<double>(bytes) * reps / (ms * 1e-3) / 1e9 : 0;
}

void cuda_device_idle(int ordinal) {
  if (cudaSetDevice(ordinal) == cudaSuccess) cudaDeviceSynchronize();
  cudaGetLastError();
}

std::string cuda_sticky_error(int ordinal) {
  cudaGetLastError();  // drop a non-sticky error left by the failure itself
  if (cudaSetDevice(ordinal) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    return cudaGetErrorName(e);
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return "";
  cudaGetLastError();
  e = cudaDeviceSynchronize();  // a sticky error survives being read
  return e == cudaSuccess ? "" : cudaGetErrorName(e);
}

}  // namespace moe::tuner
