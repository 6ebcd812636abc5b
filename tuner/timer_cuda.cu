#include <cuda_runtime.h>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "tuner/cuda_event.hpp"
#include "tuner/cupti_timer.hpp"
#include "tuner/device_tensors.hpp"
#include "tuner/timer_cuda.hpp"

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
  CuptiKernelTimer* cupti = nullptr;
  std::string base_note;  // of the whole bench: CUPTI unavailable or disabled
  std::string note;       // of the current config: base_note plus what happened to it
  DeviceTensors in, out;
  RefMap in_refs, out_refs;
  DeviceBuffer flush, ws;
  Stream stream;
  Event start, stop;
  Graph graph;
  Params config;
  bool have_config = false;
  bool graph_ok = false;
  int batch = 1;
  int kernels = 0;
  unsigned flush_value = 0;
  std::string last_timer = "events";

  Impl(const Prepared& prep, const DeviceInfo& d, TimerMode m)
      : p(prep), impl(prep.family->need_backend(Backend::cuda)), dev(d), mode(m) {}

  void run() {
    LaunchContext ctx;
    ctx.stream = stream.s;
    ctx.workspace = ws.get();
    ctx.workspace_bytes = ws.size();
    impl.run(p.problem, config, in_refs, out_refs, ctx);
    cuda_check(cudaGetLastError(), (p.family->name + " kernel launch").c_str());
  }

  float events_ms() {
    cuda_check(cudaEventSynchronize(stop.e), (p.family->name + " kernel").c_str());
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
    return ms;
  }

  void capture() {
    graph.reset();
    graph_ok = false;
    cuda_check(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    std::string why;
    try {
      for (int i = 0; i < batch; ++i) {
        LaunchContext ctx;
        ctx.stream = stream.s;
        ctx.workspace = ws.get();
        ctx.workspace_bytes = ws.size();
        impl.run(p.problem, config, in_refs, out_refs, ctx);
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream.s, &g);
    graph.g = g;
    if (why.empty() && end != cudaSuccess) why = cudaGetErrorName(end);
    if (why.empty() && g) {
      const cudaError_t inst = cudaGraphInstantiate(&graph.exec, g, 0);
      if (inst != cudaSuccess) why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(inst);
    }
    if (!why.empty() || !graph.exec) {
      cudaGetLastError();  // capture failures are not sticky; clear them
      graph.reset();
      note = "graph capture refused (" + (why.empty() ? std::string("no graph") : why) + "): hot mode times a launch loop";
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
    } else {
      d_->base_note = "CUPTI disabled: timed with CUDA events, launch overhead included";
    }
  }
  d_->note = d_->base_note;
}

CudaBench::~CudaBench() = default;

void CudaBench::set_config(const Params& config) {
  Impl& d = *d_;
  d.graph.reset();
  d.note = d.base_note;  // a refused capture or a kernel CUPTI missed is this config's, not the next's
  d.config = config;
  d.have_config = true;
  d.kernels = 0;
  const std::size_t wsb = d.impl.workspace_bytes ? d.impl.workspace_bytes(d.p.problem, config) : 0;
  if (wsb > d.ws.size()) d.ws = DeviceBuffer(wsb);
  d.run();  // warm-up: module load, first-touch
  cuda_check(cudaStreamSynchronize(d.stream.s), (d.p.family->name + " warm-up").c_str());
  if (d.mode == TimerMode::hot) {
    cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
    d.run();
    cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
    const double call_us = d.events_ms() * 1e3;
    d.batch = graph_batch_size(call_us);
    d.capture();
  }
}

double CudaBench::sample_us() {
  Impl& d = *d_;
  if (!d.have_config) throw Error("CudaBench::sample_us before set_config");
  if (d.mode == TimerMode::hot) {
    cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
    if (d.graph_ok) {
      cuda_check(cudaGraphLaunch(d.graph.exec, d.stream.s), "cudaGraphLaunch");
    } else {
      for (int i = 0; i < d.batch; ++i) d.run();
    }
    cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
    d.last_timer = d.graph_ok ? "graph" : "events-loop";
    return d.events_ms() * 1e3 / d.batch;
  }
  // Cold: overwrite twice the L2 with a changing byte so no line of the last call stays.
  cuda_check(cudaMemsetAsync(d.flush.get(), static_cast<int>(d.flush_value++ & 0xff), d.flush.size(), d.stream.s),
             "L2 flush (cudaMemsetAsync)");
  if (d.cupti) {
    cuda_check(cudaStreamSynchronize(d.stream.s), "L2 flush");
    d.cupti->begin();
  }
  cuda_check(cudaEventRecord(d.start.e, d.stream.s), "cudaEventRecord");
  d.run();
  cuda_check(cudaEventRecord(d.stop.e, d.stream.s), "cudaEventRecord");
  const double event_us = d.events_ms() * 1e3;
  if (d.cupti) {
    int k = 0;
    const double us = d.cupti->end(&k);
    if (k > 0) {
      d.kernels = k;
      d.last_timer = "cupti";
      return us;
    }
    if (d.note.empty()) d.note = "CUPTI saw no kernel for this config: timed with CUDA events";
  }
  d.last_timer = "events";
  return event_us;
}

std::string CudaBench::timer() const { return d_->last_timer; }
std::string CudaBench::note() const { return d_->note; }
int CudaBench::kernels_per_call() const { return d_->kernels; }
int CudaBench::batch() const { return d_->batch; }

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
