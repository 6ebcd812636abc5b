// Host dispatch: the multi-CTA GPU scheme on threads. Each task counts its contiguous slot
// range per expert; a column scan turns counts into per-(task, expert) first rows, so the
// stable scatter runs in parallel and still gives rows in ascending slot order.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/e4m3.hpp"

#include "common/parallel.hpp"
#include "dispatch/backends.hpp"
#include "dispatch/plan.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

// The quantizing gather: each row read once as fp32, its groups' scales and codes written.
void gather_fp8(const DispatchSpec& s, const TensorRef& x, const TensorRef& xs, const TensorRef& scales,
                const std::int32_t* src, std::int64_t R, int threads) {
  const std::int64_t G = s.D / fp8::kGroup;
  const auto* xp = x.as<const std::uint16_t>();
  parallel_for(R, threads, 16, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> row(static_cast<std::size_t>(s.D));
    for (std::int64_t r = b; r < e; ++r) {
      const std::uint16_t* in = src[r] >= 0 ? xp + (src[r] / s.K) * s.D : nullptr;
      for (std::int64_t d = 0; d < s.D; ++d) row[d] = in ? bf16_to_float(in[d]) : 0.0f;
      fp8::quantize_row(row.data(), s.D, xs.as<std::uint8_t>() + r * s.D, scales.as<float>() + r * G, s.ue8m0);
    }
  });
}

void run_cpu(const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
             const LaunchContext& ctx) {
  const DispatchSpec s = DispatchSpec::parse(problem);
  const ExpertRange range{s.E_total, s.e0, s.e1, s.A};
  const std::int64_t tokens_per_task = config.i("tokens_per_task");
  const std::int64_t d_chunk = config.i("d_chunk");
  const auto* ids = need(in, "ids").as<const std::int32_t>();
  const auto& x = need(in, "x");
  auto* offsets = need(out, "offsets").as<std::int32_t>();
  auto* src = need(out, "src").as<std::int32_t>();
  auto* dst = need(out, "dst").as<std::int32_t>();
  const auto& xs = need(out, "x_sorted");

  const std::int64_t N = s.slots(), El = s.local();
  // At most kMaxTasks tasks, so the per-(task, expert) table stays small for any T and E.
  constexpr std::int64_t kMaxTasks = 256;
  const std::int64_t chunk = std::max(tokens_per_task * s.K, (N + kMaxTasks - 1) / kMaxTasks);
  const std::int64_t tasks = (N + chunk - 1) / chunk;
  std::vector<std::int64_t> first(tasks * El, 0);  // counts, then each task's first row per expert
  parallel_for(tasks, ctx.threads, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t c = b; c < e; ++c)
      for (std::int64_t f = c * chunk; f < std::min(N, (c + 1) * chunk); ++f)
        if (const auto le = range.local(ids[f]); le >= 0) ++first[c * El + le];
  });
  std::vector<std::int64_t> run(El, 0), off(El + 1, 0);
  for (std::int64_t c = 0; c < tasks; ++c)
    for (std::int64_t e = 0; e < El; ++e) {
      const std::int64_t n = first[c * El + e];
      first[c * El + e] = run[e];
      run[e] += n;
    }
  for (std::int64_t e = 0; e < El; ++e) off[e + 1] = off[e] + (run[e] + s.A - 1) / s.A * s.A;
  const std::int64_t R = off[El];
  // Callers that cannot know R before the ids exist (the layer, engines) pass room for more;
  // rows past R are left alone.
  if (R > need(out, "src").numel() || xs.numel() != need(out, "src").numel() * s.D)
    throw Error("dispatch cpu: outputs have room for " + std::to_string(need(out, "src").numel()) +
                " rows, the ids need " + std::to_string(R));
  for (std::int64_t e = 0; e <= El; ++e) offsets[e] = static_cast<std::int32_t>(off[e]);

  parallel_for(tasks, ctx.threads, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t c = b; c < e; ++c) {
      std::int64_t* next = &first[c * El];
      for (std::int64_t f = c * chunk; f < std::min(N, (c + 1) * chunk); ++f) {
        const auto le = range.local(ids[f]);
        if (le < 0) {
          dst[f] = -1;
          continue;
        }
        const std::int64_t row = off[le] + next[le]++;
        dst[f] = static_cast<std::int32_t>(row);
        src[row] = static_cast<std::int32_t>(f);
      }
    }
  });
  for (std::int64_t e = 0; e < El; ++e)
    for (std::int64_t r = off[e] + run[e]; r < off[e + 1]; ++r) src[r] = -1;

  if (s.fp8) return gather_fp8(s, x, xs, need(out, "x_scale"), src, R, ctx.threads);
  // Gather: one unit is a (row, column chunk) pair, so wide rows split across threads too.
  const std::size_t es = dtype_size(s.dtype);
  const std::int64_t dc = d_chunk > 0 ? std::min(d_chunk, s.D) : s.D;
  const std::int64_t parts = (s.D + dc - 1) / dc;
  const auto* xp = x.as<const unsigned char>();
  auto* xsp = xs.as<unsigned char>();
  parallel_for(R * parts, ctx.threads, std::max<std::int64_t>(1, chunk * parts), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t u = b; u < e; ++u) {
      const std::int64_t r = u / parts, d0 = (u % parts) * dc, n = std::min(dc, s.D - d0);
      unsigned char* o = xsp + (r * s.D + d0) * es;
      if (src[r] >= 0)
        std::memcpy(o, xp + ((src[r] / s.K) * s.D + d0) * es, n * es);
      else
        std::memset(o, 0, n * es);
    }
  });
}

}  // namespace

BackendImpl dispatch_cpu_backend() {
  BackendImpl b;
  b.backend = Backend::cpu;
  b.config_params = {
      int_param("tokens_per_task", 64, 1, 1 << 20, "tokens whose slots one task counts and scatters"),
      int_param("d_chunk", 0, 0, 1 << 20, "hidden elements one gather task copies (0: the whole row)"),
  };
  b.space = [](const Params& problem, const DeviceInfo&, bool full) {
    const std::int64_t D = problem.i("hidden");
    const std::vector<std::int64_t> tpt = full ? std::vector<std::int64_t>{1, 8, 32, 128, 512}
                                               : std::vector<std::int64_t>{16, 128};
    const std::vector<std::int64_t> dcs = full ? std::vector<std::int64_t>{0, 256, 1024, 4096}
                                               : std::vector<std::int64_t>{0, 1024};
    std::vector<Params> r;
    for (auto t : tpt)
      for (auto dc : dcs)
        if (dc == 0 || dc < D) r.push_back(Params{{"tokens_per_task", t}, {"d_chunk", dc}});
    return r;
  };
  b.default_config = [](const Params&, const DeviceInfo&) {
    return Params{{"tokens_per_task", std::int64_t{64}}, {"d_chunk", std::int64_t{0}}};
  };
  b.invalid_reason = [](const Params&, const Params&, const DeviceInfo&) { return std::string(); };
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  b.run = run_cpu;
  return b;
}

}  // namespace moe
