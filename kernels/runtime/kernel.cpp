#include <algorithm>
#include <cstdlib>

#include "common/disjoint_views.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/programmatic_launch.hpp"
#include "moe/moe.hpp"
#include "runtime/current_device.hpp"
#include "runtime/lookup.hpp"
#include "runtime/table.hpp"

namespace moe {

struct Kernel::Impl {
  const FamilyDesc* family = nullptr;
  const BackendImpl* backend = nullptr;
  Params problem;
  DeviceInfo dev;
  // Sorted by token count; config(tokens) picks the nearest key in log2 distance.
  std::vector<std::int64_t> keys;
  std::vector<Params> configs;
  std::vector<std::string> reasons;
  bool from_table = false;  // the keys are a table's, not the default grid
  bool programmatic_launch = true;
};

namespace {

std::vector<std::string> table_dirs(const KernelOptions& o) {
  if (!o.table_dirs.empty()) return o.table_dirs;
  return runtime::default_table_dirs();
}

}  // namespace

Kernel::Kernel(const std::string& name, const Params& problem, KernelOptions o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.programmatic_launch = o.programmatic_launch;
  m.family = &moe::family(name);
  m.backend = &m.family->need_backend(o.backend);
  if (o.backend == Backend::cuda) {
    require_cuda_device(o.device);
    m.dev = cuda_device_info(o.device);
  } else {
    m.dev = cpu_device_info();
  }
  Params p = problem;
  if (p.has("tokens")) throw Error("moe::Kernel: the problem must not include tokens (they are given per call)");
  p.set("tokens", std::int64_t{1});
  m.problem = complete(m.family->problem_params, p, "family '" + name + "'");
  if (m.family->check_problem) m.family->check_problem(m.problem);

  const std::vector<std::string> dirs = table_dirs(o);
  auto resolve = [&](std::int64_t tokens, const Params* given, std::string why) {
    Params q = m.problem;
    q.set("tokens", tokens);
    const Params def = m.backend->default_config(q, m.dev);  // named: a range-for over a temporary's member dangles
    Params c;
    if (given) {
      c = *given;
    } else if (m.backend->pin_config) {
      c = def;  // its own choices come from the stages' tables
      if (why.empty()) why = "stages pinned from their tables";
    } else {
      const runtime::Choice ch = runtime::choose_config(*m.family, o.backend, q, m.dev, dirs, o.quiet);
      c = ch.config;
      if (why.empty()) why = ch.reason;
    }
    for (auto& [k, v] : def.values())
      if (!c.has(k)) c.set(k, v);
    c = complete(m.backend->config_params, c, name + " config");
    if (m.backend->pin_config) c = m.backend->pin_config(q, c, m.dev, dirs, o.quiet);
    if (m.backend->invalid_reason)
      if (auto bad = m.backend->invalid_reason(q, c, m.dev); !bad.empty())
        throw Error(name + " config " + c.str() + " is invalid at " + std::to_string(tokens) + " tokens: " + bad);
    m.keys.push_back(tokens);
    m.configs.push_back(std::move(c));
    m.reasons.push_back(std::move(why));
  };

  // A config that leaves choices to runtime dispatch is pinned per token key below instead.
  if (o.config && !m.backend->pin_config) {
    resolve(1, &*o.config, "explicit config");
    return;
  }
  // Nothing to tune: the family's only config, no table to find.
  if (const auto only = m.backend->space(m.problem, m.dev, true); only.size() == 1 && !m.backend->pin_config) {
    resolve(1, &only.front(), "the family's only config");
    return;
  }
  // The table's own keys when there is one; else the default grid, so the family default can
  // still follow the token count.
  std::shared_ptr<const runtime::ConfigTable> table;
  std::string path;
  for (const auto& dir : dirs) {
    path = runtime::table_path(dir, runtime::device_slug(m.dev), m.family->name, runtime::problem_key(m.problem));
    // A broken table is passed over here: choosing the config below says so in its one warning.
    try {
      if ((table = runtime::cached_table(path))) break;
    } catch (const Error&) {
      break;
    }
  }
  std::vector<std::int64_t> grid;
  if (table) grid = table->keys;
  m.from_table = !grid.empty();
  if (grid.empty()) grid = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  for (std::int64_t t : grid) resolve(t, o.config ? &*o.config : nullptr, o.config ? "explicit config" : "");
}

Kernel::~Kernel() = default;
Kernel::Kernel(Kernel&&) noexcept = default;
Kernel& Kernel::operator=(Kernel&&) noexcept = default;

const FamilyDesc& Kernel::family() const { return *impl_->family; }
const Params& Kernel::problem() const { return impl_->problem; }

const Params& Kernel::config(std::int64_t tokens) const { return impl_->configs[runtime::nearest_index(impl_->keys, tokens)]; }

std::string Kernel::describe(std::int64_t tokens) const {
  const std::size_t i = runtime::nearest_index(impl_->keys, tokens);
  std::string why = impl_->reasons[i];
  // Without a table the keys are the default grid's: no "nearest key" to speak of.
  if (impl_->from_table && impl_->keys.size() > 1 && impl_->keys[i] != tokens)
    why = "nearest key in log2 distance is " + std::to_string(impl_->keys[i]) + ": " + why;
  return impl_->family->name + " at " + std::to_string(tokens) + " tokens: " + impl_->configs[i].str() + " (" + why + ")";
}

std::size_t Kernel::workspace_bytes(std::int64_t tokens) const {
  if (!impl_->backend->workspace_bytes) return 0;
  Params q = impl_->problem;
  q.set("tokens", tokens);
  return impl_->backend->workspace_bytes(q, config(tokens));
}

void Kernel::run(std::int64_t tokens, const RefMap& in, const RefMap& out, void* stream, void* workspace,
                 std::size_t ws_bytes) const {
  // The configs were chosen for the device given at construction: launching on another would
  // run them (and allocate nothing) on whatever device the thread has current.
  if (impl_->backend->backend == Backend::cuda)
    require_current_device(impl_->dev.ordinal, "moe::Kernel(\"" + impl_->family->name + "\")");
  check_disjoint_views(impl_->family->name, in, out, workspace, ws_bytes);
  Params q = impl_->problem;
  q.set("tokens", tokens);
  const Params& c = config(tokens);
  if (impl_->backend->workspace_bytes) {
    const std::size_t need_ws = impl_->backend->workspace_bytes(q, c);
    if (ws_bytes < need_ws)
      throw Error(impl_->family->name + ": needs a workspace of " + std::to_string(need_ws) + " bytes at " +
                  std::to_string(tokens) + " tokens, got " + std::to_string(ws_bytes) +
                  " (size it with Kernel::workspace_bytes)");
  }
  LaunchContext ctx;
  ctx.stream = stream;
  ctx.threads = impl_->dev.threads;
  ctx.workspace = workspace;
  ctx.workspace_bytes = ws_bytes;
  const ProgrammaticLaunch pdl(impl_->programmatic_launch);
  impl_->backend->run(q, c, in, out, ctx);
}

static std::int64_t rows_of(const TensorRef& t, const char* what) {
  if (t.shape.empty()) throw Error(std::string(what) + " must have a token dimension");
  return t.shape[0];
}

void router(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef weights, TensorRef ids, void* stream) {
  RefMap in{{"logits", logits}};
  if (bias) in["bias"] = *bias;
  k.run(rows_of(logits, "logits"), in, {{"weights", weights}, {"ids", ids}}, stream);
}

void dispatch(const Kernel& k, TensorRef x, TensorRef ids, TensorRef offsets, TensorRef src, TensorRef dst,
              TensorRef x_sorted, void* stream, void* ws, std::size_t ws_bytes) {
  k.run(rows_of(x, "x"), {{"x", x}, {"ids", ids}},
        {{"offsets", offsets}, {"src", src}, {"dst", dst}, {"x_sorted", x_sorted}}, stream, ws, ws_bytes);
}

void gmm_up(const Kernel& k, std::int64_t tokens, TensorRef x_sorted, TensorRef offsets, TensorRef w13, TensorRef h,
            void* stream, void* ws, std::size_t ws_bytes) {
  k.run(tokens, {{"x_sorted", x_sorted}, {"offsets", offsets}, {"w13", w13}}, {{"h", h}}, stream, ws, ws_bytes);
}

void gmm_down(const Kernel& k, std::int64_t tokens, TensorRef h, TensorRef offsets, TensorRef w2,
              const TensorRef* row_weight, TensorRef y_sorted, void* stream, void* ws, std::size_t ws_bytes) {
  RefMap in{{"h", h}, {"offsets", offsets}, {"w2", w2}};
  if (row_weight) in["row_weight"] = *row_weight;
  k.run(tokens, in, {{"y_sorted", y_sorted}}, stream, ws, ws_bytes);
}

void combine(const Kernel& k, TensorRef y_sorted, TensorRef dst, TensorRef weights, TensorRef out, void* stream) {
  k.run(rows_of(weights, "weights"), {{"y_sorted", y_sorted}, {"dst", dst}, {"weights", weights}}, {{"out", out}},
        stream);
}

void moe_layer(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13, TensorRef w2,
               TensorRef out, void* stream, void* ws, std::size_t ws_bytes) {
  RefMap in{{"logits", logits}, {"x", x}, {"w13", w13}, {"w2", w2}};
  if (bias) in["bias"] = *bias;
  k.run(rows_of(x, "x"), in, {{"out", out}}, stream, ws, ws_bytes);
}

void moe_layer_fp8(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13,
                   TensorRef w13_scale, TensorRef w2, TensorRef w2_scale, TensorRef out, void* stream, void* ws,
                   std::size_t ws_bytes) {
  RefMap in{{"logits", logits}, {"x", x}, {"w13", w13}, {"w13_scale", w13_scale}, {"w2", w2}, {"w2_scale", w2_scale}};
  if (bias) in["bias"] = *bias;
  k.run(rows_of(x, "x"), in, {{"out", out}}, stream, ws, ws_bytes);
}

void moe_layer_w4(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13,
                  TensorRef w13_scale, const TensorRef* w13_zero, TensorRef w2, TensorRef w2_scale,
                  const TensorRef* w2_zero, TensorRef out, void* stream, void* ws, std::size_t ws_bytes) {
  RefMap in{{"logits", logits}, {"x", x}, {"w13", w13}, {"w13_scale", w13_scale}, {"w2", w2}, {"w2_scale", w2_scale}};
  if (bias) in["bias"] = *bias;
  if (w13_zero) in["w13_zero"] = *w13_zero;
  if (w2_zero) in["w2_zero"] = *w2_zero;
  k.run(rows_of(x, "x"), in, {{"out", out}}, stream, ws, ws_bytes);
}

}  // namespace moe
