// The dispatch cuda backend: config space over the instantiated aligner and gather kernels.
#include <algorithm>
#include <string>

#include "common/int_sets.hpp"
#include "dispatch/backends.hpp"
#include "dispatch/cuda_launch.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

using namespace dispatch_cuda;

std::size_t smem_limit(const DeviceInfo& dev) { return dev.smem_optin ? dev.smem_optin : 48 * 1024; }

std::int64_t row_bytes(const DispatchSpec& s) { return s.D * static_cast<std::int64_t>(dtype_size(s.dtype)); }

std::string aligner_invalid(const DispatchSpec& s, const Params& c, const DeviceInfo& dev) {
  const std::int64_t th = c.i("align_threads");
  if (c.s("aligner") == "single") {
    if (!one_of(th, kSingleThreads)) return "the single-CTA aligner is built for align_threads " + list(kSingleThreads);
    if (s.slots() > kSingleMaxSlots)
      return std::to_string(s.slots()) + " slots are too many for one CTA (at most " +
             std::to_string(kSingleMaxSlots) + "): use aligner=multi";
    const std::size_t smem = single_smem_bytes(static_cast<int>(th), s.local(), s.slots());
    if (smem > smem_limit(dev))
      return "the single-CTA aligner needs " + std::to_string(smem) +
             " bytes of shared memory for " + std::to_string(s.local()) + " experts, the device has " +
             std::to_string(smem_limit(dev)) + ": use fewer align_threads or aligner=multi";
    return "";
  }
  if (!one_of(th, kMultiThreads)) return "the multi-CTA aligner is built for align_threads " + list(kMultiThreads);
  if (!one_of(c.i("align_chunk"), kMultiChunks)) return "align_chunk must be one of " + list(kMultiChunks);
  const std::size_t smem = multi_smem_bytes(static_cast<int>(th), s.local(), static_cast<int>(c.i("align_chunk")));
  if (smem > smem_limit(dev))
    return "the multi-CTA aligner needs " + std::to_string(smem) +
           " bytes of shared memory for " + std::to_string(s.local()) + " experts, the device has " +
           std::to_string(smem_limit(dev));
  return "";
}

std::string gather_invalid(const DispatchSpec& s, const Params& c) {
  const std::int64_t th = c.i("threads"), rows = c.i("rows"), vec = c.i("vec");
  if (c.s("order") != "row" && c.s("order") != "token") return "order must be row or token";
  if (!one_of(th, kGatherThreads)) return "threads must be one of " + list(kGatherThreads);
  if (!one_of(rows, kGatherRows)) return "rows must be one of " + list(kGatherRows);
  if (th / rows < 32) return "threads/rows must leave a warp per row";
  if (!one_of(vec, kGatherVec)) return "vec must be one of " + list(kGatherVec) + " (bytes)";
  if (row_bytes(s) % vec)
    return "vec=" + std::to_string(vec) + " bytes does not divide a row of " + std::to_string(row_bytes(s)) +
           " bytes (hidden " + std::to_string(s.D) + "): use a smaller vec";
  if (!one_of(c.i("unroll"), kGatherUnroll)) return "unroll must be one of " + list(kGatherUnroll);
  return "";
}

// fp8 gathers by row with 16-byte accesses, one warp per four 128-column groups.
std::string quant_gather_invalid(const DispatchSpec& s, const Params& c) {
  if (!one_of(c.i("threads"), kQuantGatherThreads)) return "fp8: threads must be one of " + list(kQuantGatherThreads);
  if (c.s("order") != "row" || c.i("rows") != 1 || c.i("vec") != 16 || c.i("unroll") != 4)
    return "fp8's quantizing gather reads x by row, 16 bytes at a time: keep order=row rows=1 vec=16 unroll=4 (only "
           "threads varies)";
  if (s.D % 128) return "fp8 quantizes groups of 128: hidden must be a multiple of 128";
  return "";
}

std::string invalid_reason(const Params& problem, const Params& c, const DeviceInfo& dev) {
  const DispatchSpec s = DispatchSpec::parse(problem);
  std::string why = aligner_invalid(s, c, dev);
  if (!why.empty()) return why;
  return s.fp8 ? quant_gather_invalid(s, c) : gather_invalid(s, c);
}

std::int64_t widest_vec(const DispatchSpec& s) {
  for (int v : kGatherVec)
    if (row_bytes(s) % v == 0) return v;
  return 1;  // odd byte rows cannot happen: every dtype is at least 2 bytes
}

Params make(const std::string& aligner, std::int64_t at, std::int64_t chunk, const std::string& order, std::int64_t th,
            std::int64_t rows, std::int64_t vec, std::int64_t unroll) {
  return Params{{"aligner", aligner}, {"align_threads", at}, {"align_chunk", chunk}, {"order", order},
                {"threads", th},      {"rows", rows},        {"vec", vec},          {"unroll", unroll}};
}

Params default_config(const Params& problem, const DeviceInfo& dev) {
  const DispatchSpec s = DispatchSpec::parse(problem);
  const std::int64_t vec = widest_vec(s);
  const std::int64_t rows = row_bytes(s) <= 1024 && !s.fp8 ? 4 : 1;  // short rows: several per CTA
  // Once the routed copies outgrow the L2, reading each token once beats re-reading it per row.
  const double l2 = dev.l2_bytes ? static_cast<double>(dev.l2_bytes) : 50e6;
  const bool by_token = !s.fp8 && static_cast<double>(s.slots()) * static_cast<double>(row_bytes(s)) > l2;
  const std::string order = by_token ? "token" : "row";
  Params c = make("single", 1024, 2048, order, 256, rows, vec, 4);
  if (s.slots() <= 4096 && aligner_invalid(s, c, dev).empty()) return c;
  c.set("aligner", std::string("multi")).set("align_threads", std::int64_t{256});
  c.set("align_chunk", std::int64_t{s.slots() <= 65536 ? 2048 : 8192});
  if (!aligner_invalid(s, c, dev).empty()) c.set("align_threads", std::int64_t{128});
  return c;
}

std::vector<Params> space(const Params& problem, const DeviceInfo& dev, bool full) {
  const DispatchSpec s = DispatchSpec::parse(problem);
  std::vector<Params> aligners;
  for (int th : kSingleThreads)
    if (full || th == 1024) aligners.push_back(make("single", th, 2048, "row", 0, 0, 0, 0));
  for (int th : kMultiThreads)
    for (int ch : kMultiChunks)
      if (full || th == 256) aligners.push_back(make("multi", th, ch, "row", 0, 0, 0, 0));
  // Narrower vectors than the widest valid one only lose; full keeps one step down.
  const std::int64_t widest = widest_vec(s);
  std::vector<Params> gathers;
  for (int th : kQuantGatherThreads)
    if (s.fp8 && (full || th == 256)) gathers.push_back(make("", 0, 0, "row", th, 1, 16, 4));
  for (const char* order : {"row", "token"})
    for (int th : kGatherThreads)
      for (int rows : kGatherRows)
        for (int vec : kGatherVec)
          for (int u : kGatherUnroll) {
            if (s.fp8 || (!full && (rows == 2 || u != 4))) continue;
            if (vec != widest && (!full || vec * 2 != widest)) continue;
            gathers.push_back(make("", 0, 0, order, th, rows, vec, u));
          }
  std::vector<Params> r;
  for (auto& a : aligners) {
    if (!aligner_invalid(s, a, dev).empty()) continue;
    for (auto& g : gathers) {
      if (!(s.fp8 ? quant_gather_invalid(s, g) : gather_invalid(s, g)).empty()) continue;
      Params c = g;
      for (const char* k : {"aligner", "align_threads", "align_chunk"}) c.set(k, a.at(k));
      r.push_back(c);
    }
  }
  return r;
}

}  // namespace

void run_dispatch(const Launchers& l, const Params& problem, const Params& c, const RefMap& in, const RefMap& out,
                  const LaunchContext& ctx) {
  const DispatchSpec s = DispatchSpec::parse(problem);
  const TensorRef& x = need(in, "x");
  const TensorRef& ids = need(in, "ids");
  const TensorRef& src = need(out, "src");
  const TensorRef& xs = need(out, "x_sorted");
  if (ids.numel() != s.slots() || x.numel() != s.T * s.D || need(out, "dst").numel() != s.slots() ||
      need(out, "offsets").numel() != s.local() + 1 || xs.numel() != src.numel() * s.D)
    throw Error("dispatch cuda: tensor shapes do not match the problem");
  AlignArgs a;
  a.ids = ids.as<const std::int32_t>();
  a.slots = s.slots();
  a.e0 = static_cast<int>(s.e0);
  a.local = static_cast<int>(s.local());
  a.E_total = static_cast<int>(s.E_total);
  a.A = static_cast<int>(s.A);
  a.offsets = need(out, "offsets").as<std::int32_t>();
  a.src = src.as<std::int32_t>();
  a.dst = need(out, "dst").as<std::int32_t>();
  a.rows = src.numel();
  if (c.s("aligner") == "single")
    l.one_cta_aligner(a, static_cast<int>(c.i("align_threads")), ctx.stream);
  else
    l.multi_cta_aligner(a, static_cast<int>(c.i("align_threads")), static_cast<int>(c.i("align_chunk")), ctx.workspace,
                ctx.workspace_bytes, ctx.stream);
  GatherArgs g;
  g.x = x.data;
  g.src = a.src;
  g.x_sorted = xs.data;
  g.rows = a.rows;
  g.slots = a.slots;
  g.K = static_cast<int>(s.K);
  g.row_bytes = row_bytes(s);
  g.used_rows = a.offsets + s.local();  // written by the aligner above, on the same stream
  if (s.fp8) {
    g.x_scale = need(out, "x_scale").as<float>();
    g.ue8m0 = s.ue8m0;
    return l.quant_gatherer(g, static_cast<int>(c.i("threads")), ctx.stream);
  }
  ScatterArgs by_token;
  by_token.dst = a.dst;
  by_token.T = s.T;
  l.gatherer(g, by_token, c.s("order") == "token" ? 1 : 0, static_cast<int>(c.i("threads")), static_cast<int>(c.i("rows")), static_cast<int>(c.i("vec")),
         static_cast<int>(c.i("unroll")), ctx.stream);
}

namespace {

void run(const Params& problem, const Params& c, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  run_dispatch(Launchers{&align_single, &align_multi, &gather, &gather_fp8}, problem, c, in, out, ctx);
}

}  // namespace

BackendImpl dispatch_cuda_backend() {
  BackendImpl b;
  b.backend = Backend::cuda;
  ParamSpec aligner;
  aligner.name = "aligner";
  aligner.kind = ParamKind::Choice;
  aligner.default_value = std::string("multi");
  aligner.choices = {"single", "multi"};
  aligner.help = "single: one CTA does counts, offsets and maps (decode); multi: histogram, scan, stable scatter";
  ParamSpec order = aligner;
  order.name = "order";
  order.default_value = std::string("row");
  order.choices = {"row", "token"};
  order.help = "gather by row (each row reads its token) or by token (each token read once, stored to its K rows)";
  b.config_params = {
      aligner,
      int_param("align_threads", 256, 32, 1024, "aligner threads per CTA (single: 512|1024, multi: 128|256)"),
      int_param("align_chunk", 2048, 32, 1 << 24, "multi aligner: slots per CTA (2048|8192; single ignores it)"),
      order,
      int_param("threads", 256, 32, 1024, "gather threads per CTA (128|256|512)"),
      int_param("rows", 1, 1, 64, "gather rows (order=token: tokens) per CTA (1|2|4)"),
      int_param("vec", 16, 1, 16, "gather bytes per load/store (16|8|4|2; must divide the row)"),
      int_param("unroll", 4, 1, 16, "gather loads in flight per thread (1|4)"),
  };
  b.space = space;
  b.default_config = default_config;
  b.invalid_reason = invalid_reason;
  b.workspace_bytes = [](const Params& problem, const Params& c) -> std::size_t {
    if (c.s("aligner") != "multi") return 0;
    const DispatchSpec s = DispatchSpec::parse(problem);
    const auto chunk = std::max<std::int64_t>(32, c.i("align_chunk"));
    return multi_workspace_bytes(s.slots(), s.local(), static_cast<int>(chunk));
  };
  b.run = run;
  return b;
}

}  // namespace moe
