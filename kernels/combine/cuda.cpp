// The combine cuda backend: config space over the instantiated kernels (cuda_kernel.cuh).
#include <algorithm>
#include <string>

#include "common/int_sets.hpp"
#include "combine/backends.hpp"
#include "combine/cuda_launch.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

using namespace combine_cuda;

std::string invalid_reason(const Params& problem, const Params& c, const DeviceInfo&) {
  const CombineSpec s = CombineSpec::parse(problem);
  const std::int64_t th = c.i("threads"), tpc = c.i("tokens_per_cta"), vec = c.i("vec");
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(s.dtype));
  if (!one_of(th, kThreads)) return "threads must be one of " + list(kThreads);
  if (!one_of(tpc, kTokensPerCta)) return "tokens_per_cta must be one of " + list(kTokensPerCta);
  if (th / tpc < 32) return "threads/tokens_per_cta must leave at least a warp per token";
  if (!one_of(vec, kVec)) return "vec must be one of " + list(kVec) + " (bytes)";
  if (vec < es) return "vec=" + std::to_string(vec) + " bytes is narrower than one " + std::string(dtype_name(s.dtype));
  if (s.D % (vec / es))
    return "vec=" + std::to_string(vec) + " bytes (" + std::to_string(vec / es) + " elements) does not divide hidden " +
           std::to_string(s.D) + ": use a smaller vec";
  return "";
}

std::int64_t widest_vec(const CombineSpec& s) {
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(s.dtype));
  for (int v : kVec)
    if (v >= es && s.D % (v / es) == 0) return v;
  return es;
}

Params make(std::int64_t th, std::int64_t tpc, std::int64_t vec) {
  return Params{{"threads", th}, {"tokens_per_cta", tpc}, {"vec", vec}};
}

Params default_config(const Params& problem, const DeviceInfo&) {
  const CombineSpec s = CombineSpec::parse(problem);
  const std::int64_t vec = widest_vec(s);
  const std::int64_t vecs = s.D / (vec / static_cast<std::int64_t>(dtype_size(s.dtype)));
  // A few vectors per thread: short rows share a CTA, long rows get more threads.
  if (vecs <= 64) return make(128, 4, vec);
  if (vecs <= 512) return make(128, 1, vec);
  return make(256, 1, vec);
}

std::vector<Params> space(const Params& problem, const DeviceInfo& dev, bool full) {
  const CombineSpec s = CombineSpec::parse(problem);
  std::vector<Params> r;
  for (int th : kThreads)
    for (int tpc : kTokensPerCta) {
      if (!full && tpc != 1 && tpc != 4) continue;
      for (int vec : kVec) {
        if (!full && vec != widest_vec(s)) continue;
        Params c = make(th, tpc, vec);
        if (invalid_reason(problem, c, dev).empty()) r.push_back(c);
      }
    }
  return r;
}

}  // namespace

void run_combine(const combine_cuda::Launchers& l, const Params& problem, const Params& c, const RefMap& in,
                 const RefMap& out, const LaunchContext& ctx) {
  using namespace combine_cuda;
  const CombineSpec s = CombineSpec::parse(problem);
  Args a;
  const TensorRef& y = need(in, s.dense ? "y" : "y_sorted");
  a.y = y.data;
  a.rows = s.dense ? s.slots() : y.shape[0];
  a.dst = s.dense ? nullptr : need(in, "dst").as<const std::int32_t>();
  a.w = need(in, "weights").as<const float>();
  a.out = need(out, "out").data;
  if (s.rmsnorm) {
    a.residual = need(in, "residual").data;
    a.gamma = need(in, "gamma").data;
    a.residual_out = need(out, "residual_out").data;
  }
  a.T = s.T;
  a.D = s.D;
  a.K = static_cast<int>(s.K);
  a.eps = static_cast<float>(s.eps);
  if (y.numel() != a.rows * s.D || need(in, "weights").numel() != s.slots() || need(out, "out").numel() != s.T * s.D ||
      (!s.dense && need(in, "dst").numel() != s.slots()))
    throw Error("combine cuda: tensor shapes do not match the problem");
  Config cfg;
  cfg.threads = static_cast<int>(c.i("threads"));
  cfg.tokens_per_cta = static_cast<int>(c.i("tokens_per_cta"));
  cfg.vec = static_cast<int>(c.i("vec"));
  const bool f32_out = s.out_dtype == DType::f32;
  switch (s.dtype) {
    case DType::bf16: l.bf16(a, f32_out, s.rmsnorm, cfg, ctx.stream); break;
    case DType::f16: l.f16(a, f32_out, s.rmsnorm, cfg, ctx.stream); break;
    case DType::f32: l.f32(a, s.rmsnorm, cfg, ctx.stream); break;
    default: throw Error("combine cuda: unsupported dtype " + std::string(dtype_name(s.dtype)));
  }
}

namespace {

void run(const Params& problem, const Params& c, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  run_combine(combine_cuda::Launchers{&combine_cuda::run_bf16, &combine_cuda::run_f16, &combine_cuda::run_f32}, problem,
              c, in, out, ctx);
}

}  // namespace

BackendImpl combine_cuda_backend() {
  BackendImpl b;
  b.backend = Backend::cuda;
  b.config_params = {
      int_param("threads", 256, 32, 1024, "threads per CTA (128|256|512)"),
      int_param("tokens_per_cta", 1, 1, 64, "tokens per CTA, each with threads/tokens_per_cta threads (1|2|4|8)"),
      int_param("vec", 16, 1, 16, "bytes of y per load (16|8|4|2; the elements must divide hidden)"),
  };
  b.space = space;
  b.default_config = default_config;
  b.invalid_reason = invalid_reason;
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  b.run = run;
  return b;
}

}  // namespace moe
