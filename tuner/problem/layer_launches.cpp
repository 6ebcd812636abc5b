#include "tuner/problem/layer_launches.hpp"

#include <algorithm>
#include <string>

#include "layer/family.hpp"
#include "layer/stage_configs.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "moe/programmatic_launch.hpp"
#include "tuner/problem/kernel_static.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/problem/problem.hpp"

namespace moe::tuner {

namespace {

// The runtime as a described H100 answers it (132 SMs, 50 MiB of L2); a launch only counts.
std::vector<LayerLaunch>* recording = nullptr;
const CudaRuntimeCalls kDescribedHopper{
    [] { return 0; },
    [](int) { return 132; },
    [](const void*, std::size_t) {},
    [](const void*, int, std::size_t) { return 1; },
    [](const void*, unsigned g, unsigned b, std::size_t s, void*, void**) {
      if (recording) recording->push_back({g, b, s});
    },
    [](const void*, int, int, int, std::size_t) { return 66; },
    [](int) { return std::size_t{50} << 20; },
};

// The stand-in is this process's runtime only while a count runs, whatever it throws.
struct DescribedRuntime {
  explicit DescribedRuntime(std::vector<LayerLaunch>* into) {
    recording = into;
    set_cuda_runtime_calls_for_testing(&kDescribedHopper);
  }
  ~DescribedRuntime() {
    set_cuda_runtime_calls_for_testing(nullptr);
    recording = nullptr;
  }
  DescribedRuntime(const DescribedRuntime&) = delete;
  DescribedRuntime& operator=(const DescribedRuntime&) = delete;
};

// Device addresses no host code reads: each tensor 256-byte aligned, apart from the others.
struct FakeAddresses {
  std::uintptr_t next = std::uintptr_t{1} << 44;
  TensorRef ref(const TensorSpec& s) {
    TensorRef r{reinterpret_cast<void*>(next), s.dtype, s.shape};
    next += (r.nbytes() + 511) / 256 * 256;
    return r;
  }
};

Params decode_config(std::int64_t fold) {
  Params c = family("moe-layer").need_backend(Backend::cuda).default_config(Params{}, described_hopper());
  return c.set("path", std::string("decode")).set("fold_combine", fold).set("l2_prefetch", std::int64_t{2});
}

}  // namespace

std::vector<LayerLaunch> layer_call_launches(const Params& L, const Params& config) {
  const FamilyDesc& f = family("moe-layer");
  const BackendImpl& cuda = f.need_backend(Backend::cuda);
  const DeviceInfo dev = described_hopper();
  if (std::string why = cuda.invalid_reason(L, config, dev); !why.empty()) throw Error(why);
  FakeAddresses a;
  RefMap in, out;
  for (const TensorSpec& s : f.input_specs(L)) in[s.name] = a.ref(s);
  for (const TensorSpec& s : f.output_specs(L, TensorMap{})) out[s.name] = a.ref(s);
  std::vector<LayerLaunch> launches;
  const DescribedRuntime runtime(&launches);
  const ProgrammaticLaunch pdl(true);
  auto resolved = std::make_shared<const ResolvedLayer>(resolve_layer(Backend::cuda, L, config, dev, {}, true));
  const auto plan = plan_layer(Backend::cuda, L, resolved, in);
  LaunchContext ctx;
  ctx.workspace = reinterpret_cast<void*>(a.next);
  ctx.workspace_bytes = std::size_t{1} << 40;
  ctx.plan = plan.get();
  launches.clear();  // planning may launch nothing, but a call is what is counted
  cuda.run(L, config, in, out, ctx);
  return launches;
}

const std::vector<std::int64_t>& layer_launch_tokens() {
  static const std::vector<std::int64_t> t = {1, 2, 4, 8, 16, 32, 64};
  return t;
}

json layer_kernels_per_call() {
  const FamilyDesc& f = family("moe-layer");
  const BackendImpl& cuda = f.need_backend(Backend::cuda);
  const DeviceInfo dev = described_hopper();
  json rows = json::array();
  for (const std::string& name : model_names()) {
    const Params model = load_model(name);
    std::vector<std::string> dtypes = {"bf16", "fp8"};
    if (model.has("dtype") && model.s("dtype") != "bf16" && model.s("dtype") != "fp8") dtypes.push_back(model.s("dtype"));
    // A 4-bit checkpoint (gpt-oss's mxfp4, Kimi-K2-Thinking's int4) says so in its quantization
    // block, not in dtype: its own format is a row too.
    if (model.has("quant") && (model.s("quant") == "mxfp4" || model.s("quant") == "int4") &&
        std::find(dtypes.begin(), dtypes.end(), model.s("quant")) == dtypes.end())
      dtypes.push_back(model.s("quant"));
    for (const std::string& dtype : dtypes)
      for (const char* path : {"stages", "decode"}) {
        // The expert function decides which kernels run (gpt-oss's biased stages each add a pass
        // flagging the padding rows ahead of their gmm), so it is part of the row.
        const std::string act = model.has("activation") ? model.s("activation") : "silu";
        json row = {{"model", name}, {"dtype", dtype}, {"path", path}, {"activation", act}};
        json per = json::array();
        for (const std::int64_t T : layer_launch_tokens()) {
          json at = {{"tokens", T}};
          try {
            const Params L = problem_for(f, model, Params{{"tokens", T}, {"dtype", dtype}}, true);
            Params c = std::string(path) == "stages" ? cuda.default_config(L, dev) : decode_config(1);
            if (std::string(path) == "decode")
              // Where down cannot fold, the decode path runs combine as its own kernel: say why.
              if (std::string why = cuda.invalid_reason(L, c, dev); why.find("fold_combine=1") != std::string::npos)
                at["not_folded"] = why, c = decode_config(0);
            at["fold_combine"] = c.has("fold_combine") ? c.i("fold_combine") : 0;
            json grids = json::array();
            for (const LayerLaunch& l : layer_call_launches(L, c)) grids.push_back(l.grid);
            at["kernels"] = grids.size();
            at["grids"] = grids;
          } catch (const Error& e) {
            at = {{"tokens", T}, {"invalid", e.what()}};
          }
          per.push_back(at);
        }
        row["calls"] = per;
        rows.push_back(row);
      }
  }
  return {{"device", dev.name}, {"tokens", layer_launch_tokens()}, {"rows", rows}};
}

}  // namespace moe::tuner
