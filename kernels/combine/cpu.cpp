// Host combine: tasks of tokens (and, without the row-wide epilogue, column slices of D),
// fp32 accumulation in slot order like the GPU kernels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "combine/backends.hpp"
#include "common/parallel.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

// Element access by dtype without per-element switches in the inner loops.
struct F32 {
  using storage = float;
  static float load(storage v) { return v; }
  static storage store(float v) { return v; }
};
struct BF16 {
  using storage = std::uint16_t;
  static float load(storage v) { return bf16_to_float(v); }
  static storage store(float v) { return float_to_bf16(v); }
};
struct F16 {
  using storage = std::uint16_t;
  static float load(storage v) { return f16_to_float(v); }
  static storage store(float v) { return float_to_f16(v); }
};

template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(F32{}); return;
    case DType::bf16: f(BF16{}); return;
    case DType::f16: f(F16{}); return;
    default: throw Error("combine: unsupported dtype " + std::string(dtype_name(t)));
  }
}

template <class In, class Out>
void combine_rows(const CombineSpec& s, std::int64_t d_split, std::int64_t tokens_per_task, const RefMap& in,
                  const RefMap& out, int threads) {
  using TI = typename In::storage;
  using TO = typename Out::storage;
  const TensorRef& yref = need(in, s.dense ? "y" : "y_sorted");
  const auto* y = yref.as<const TI>();
  const std::int64_t R = s.dense ? s.slots() : yref.shape[0];
  const auto* w = need(in, "weights").as<const float>();
  const std::int32_t* dst = s.dense ? nullptr : need(in, "dst").as<const std::int32_t>();
  auto* o = need(out, "out").as<TO>();
  const TI* res = s.rmsnorm ? need(in, "residual").as<const TI>() : nullptr;
  const TI* gamma = s.rmsnorm ? need(in, "gamma").as<const TI>() : nullptr;
  TI* res_out = s.rmsnorm ? need(out, "residual_out").as<TI>() : nullptr;

  const std::int64_t blocks = (s.T + tokens_per_task - 1) / tokens_per_task;
  const std::int64_t dp = (s.D + d_split - 1) / d_split;
  parallel_for(blocks * d_split, threads, 1, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> acc(dp);
    std::vector<std::int64_t> rows(s.K);
    std::vector<float> ws(s.K);
    for (std::int64_t u = b; u < e; ++u) {
      const std::int64_t tb = u / d_split, d0 = (u % d_split) * dp, d1 = std::min(s.D, d0 + dp);
      for (std::int64_t t = tb * tokens_per_task; t < std::min(s.T, (tb + 1) * tokens_per_task); ++t) {
        std::int64_t n = 0;
        for (std::int64_t j = 0; j < s.K; ++j) {
          const std::int64_t f = t * s.K + j;
          const std::int64_t row = s.dense ? f : dst[f];
          if (row < 0 || row >= R || w[f] == 0.0f) continue;
          rows[n] = row, ws[n++] = w[f];
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (std::int64_t i = 0; i < n; ++i) {
          const TI* yr = y + rows[i] * s.D;
          for (std::int64_t d = d0; d < d1; ++d) acc[d - d0] += ws[i] * In::load(yr[d]);
        }
        if (!s.rmsnorm) {
          for (std::int64_t d = d0; d < d1; ++d) o[t * s.D + d] = Out::store(acc[d - d0]);
          continue;
        }
        // rmsnorm: d_split is 1 here, the whole row is in acc.
        double sumsq = 0;
        for (std::int64_t d = 0; d < s.D; ++d) {
          const TI r = In::store(In::load(res[t * s.D + d]) + acc[d]);
          res_out[t * s.D + d] = r;
          const double x = In::load(r);
          sumsq += x * x;
        }
        const float inv = static_cast<float>(1.0 / std::sqrt(sumsq / static_cast<double>(s.D) + s.eps));
        for (std::int64_t d = 0; d < s.D; ++d)
          o[t * s.D + d] = Out::store(In::load(res_out[t * s.D + d]) * inv * In::load(gamma[d]));
      }
    }
  });
}

void run_cpu(const Params& problem, const Params& c, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  const CombineSpec s = CombineSpec::parse(problem);
  const std::int64_t d_split = c.i("d_split"), tpt = c.i("tokens_per_task");
  if (s.rmsnorm && d_split != 1) throw Error("combine cpu: the rmsnorm epilogue needs d_split=1");
  if (need(out, "out").numel() != s.T * s.D) throw Error("combine cpu: out does not match the problem");
  with_type(s.dtype, [&](auto in_t) {
    using In = decltype(in_t);
    if (s.out_dtype == s.dtype)
      combine_rows<In, In>(s, d_split, tpt, in, out, ctx.threads);
    else
      combine_rows<In, F32>(s, d_split, tpt, in, out, ctx.threads);
  });
}

}  // namespace

BackendImpl combine_cpu_backend() {
  BackendImpl b;
  b.backend = Backend::cpu;
  b.config_params = {
      int_param("tokens_per_task", 4, 1, 1 << 20, "tokens one task reduces"),
      int_param("d_split", 1, 1, 64, "column slices of each row, as separate tasks (1 with rmsnorm)"),
  };
  b.space = [](const Params& problem, const DeviceInfo&, bool full) {
    const bool rms = problem.s("epilogue") == "rmsnorm";
    const std::int64_t D = problem.i("hidden");
    const std::vector<std::int64_t> tpt = full ? std::vector<std::int64_t>{1, 4, 16, 64}
                                               : std::vector<std::int64_t>{1, 16};
    const std::vector<std::int64_t> ds = full ? std::vector<std::int64_t>{1, 2, 4} : std::vector<std::int64_t>{1, 4};
    std::vector<Params> r;
    for (auto t : tpt)
      for (auto d : ds)
        if (d == 1 || (!rms && d <= D)) r.push_back(Params{{"tokens_per_task", t}, {"d_split", d}});
    return r;
  };
  b.default_config = [](const Params&, const DeviceInfo&) {
    return Params{{"tokens_per_task", std::int64_t{4}}, {"d_split", std::int64_t{1}}};
  };
  b.invalid_reason = [](const Params& problem, const Params& c, const DeviceInfo&) -> std::string {
    if (problem.s("epilogue") == "rmsnorm" && c.i("d_split") != 1)
      return "the rmsnorm epilogue reduces whole rows: use d_split=1";
    if (c.i("d_split") > problem.i("hidden")) return "d_split is larger than hidden";
    return "";
  };
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  b.run = run_cpu;
  return b;
}

}  // namespace moe
