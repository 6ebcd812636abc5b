#include "gmm/spec.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/fp8_problem.hpp"
#include "common/w4_problem.hpp"
#include "moe/error.hpp"
#include "moe/memory.hpp"

namespace moe {

namespace {
std::atomic<std::uint64_t> n_parses{0};
}  // namespace

std::uint64_t GmmSpec::parses() { return n_parses.load(std::memory_order_relaxed); }

GmmSpec GmmSpec::parse(const Params& p) {
  n_parses.fetch_add(1, std::memory_order_relaxed);
  GmmSpec s;
  s.tokens = p.i("tokens");
  const std::string dt = p.s("dtype");
  s.fp8 = dt == "fp8";
  s.wq = dt == "mxfp4" ? WeightFormat::mxfp4 : dt == "int4" ? WeightFormat::int4 : WeightFormat::dense;
  s.dtype = s.fp8 ? DType::e4m3 : s.w4() ? DType::bf16 : parse_dtype(dt);
  if (s.wq == WeightFormat::mxfp4) s.group = 32;
  if (s.wq == WeightFormat::int4) {
    s.group = p.has("group") ? p.i("group") : 128;
    s.zero_point = p.has("zero_point") && p.b("zero_point");
    if (s.group != 32 && s.group != 128)
      throw Error("gmm: int4 takes group=32 or group=128 (K elements per scale), got " + std::to_string(s.group));
  }
  s.ue8m0 = s.fp8 && p.has("scale_fmt") && p.s("scale_fmt") == "ue8m0";
  s.experts = p.i("experts");
  s.topk = p.i("topk");
  s.shared = p.i("shared");
  s.hidden = p.i("hidden");
  s.intermediate = p.i("intermediate");
  s.align = p.i("align");
  s.down = p.s("stage") == "down";
  s.routed_weight = p.b("routed_weight");
  // The expert function's parameters are absent from problems built before they existed.
  s.swiglu_oai = p.has("activation") && p.s("activation") == "swiglu_oai";
  if (p.has("alpha")) s.alpha = p.f("alpha");
  if (p.has("limit")) s.limit = p.f("limit");
  s.interleaved = p.has("w13_layout") && p.s("w13_layout") == "interleaved";
  if (p.has("w13_block")) s.w13_block = p.i("w13_block");
  s.bias13 = p.has("bias13") && p.b("bias13");
  s.bias2 = p.has("bias2") && p.b("bias2");
  if (s.dtype != DType::bf16 && s.dtype != DType::f16 && !s.fp8)
    throw Error("gmm computes in bf16, f16 or fp8, not " + std::string(dtype_name(s.dtype)));
  if (s.fp8) check_fp8_dims("gmm", s.hidden, s.intermediate);
  if (s.w4()) check_w4_dims("gmm", dt, s.group, s.hidden, s.intermediate);
  if (s.fp8 && !s.plain_expert_fn())
    throw Error("gmm: dtype=" + dt +
                " computes silu(gate)*up on split w13 without expert biases; this problem asks for " + s.expert_fn_str() +
                ": use dtype bf16, f16, mxfp4 or int4 for it");
  if (s.interleaved && !s.down && s.intermediate % s.w13_block != 0)
    throw Error("gmm: w13_block=" + std::to_string(s.w13_block) + " does not divide intermediate=" +
                std::to_string(s.intermediate) + ": interleaved gate and up blocks must tile I (per --tp shard)");
  if (s.topk > s.experts)
    throw Error("gmm: topk=" + std::to_string(s.topk) + " is larger than experts=" + std::to_string(s.experts));
  if (s.routed_weight && !s.down)
    throw Error("gmm: routed_weight multiplies the down projection's rows: use it with stage=down");
  const std::int64_t b = p.i("expert_begin"), e = p.i("expert_end");
  s.expert_begin = b;
  s.expert_end = e < 0 ? s.e_total() : e;
  if (s.expert_end > s.e_total() || s.expert_begin >= s.expert_end)
    throw Error("gmm: local experts [" + std::to_string(b) + ", " + std::to_string(s.expert_end) +
                ") must be a non-empty range inside [0, " + std::to_string(s.e_total()) +
                ") (experts + shared); set expert_begin/expert_end or use --ep");
  // Offsets are int32 (as every engine's aligner writes them), so rows must fit.
  if (s.max_rows() > std::numeric_limits<std::int32_t>::max())
    throw Error("gmm: up to " + std::to_string(s.max_rows()) +
                " dispatched rows do not fit int32 offsets: use fewer tokens");
  return s;
}

std::size_t GmmSpec::weight_bytes_per_expert() const {
  const auto n = static_cast<std::size_t>(n_w()), k = static_cast<std::size_t>(k_dim());
  if (!w4()) return n * k * elem_bytes();
  // Half a byte per element; a 1-byte e8m0 or 2-byte bf16 scale per group; int4's zero points.
  const auto g = static_cast<std::size_t>(w_groups());
  return n * k / 2 + n * g * (wq == WeightFormat::mxfp4 ? 1 : 2) + (zero_point ? n * g / 2 : 0);
}

double GmmSpec::avg_rows_per_expert() const {
  const double routed = static_cast<double>(tokens) * static_cast<double>(topk) / static_cast<double>(experts);
  const double rows = (shared > 0 && expert_end > experts) ? std::max(routed, static_cast<double>(tokens)) : routed;
  return std::ceil(std::max(rows, 1.0) / static_cast<double>(align)) * static_cast<double>(align);
}

std::string GmmSpec::expert_fn_str() const {
  std::string r;
  const auto add = [&r](const std::string& t) { r += (r.empty() ? "" : ", ") + t; };
  if (!down && swiglu_oai) add("activation=swiglu_oai");
  if (!down && interleaved) add("w13_layout=interleaved");
  if (biased()) add(std::string(bias_name()) + "=1");
  return r;
}

std::string GmmSpec::describe() const {
  return std::string("stage=") + (down ? "down" : "up") + " experts=" + std::to_string(e_total()) +
         (e_local() != e_total()
              ? " (local " + std::to_string(expert_begin) + ".." + std::to_string(expert_end - 1) + ")"
              : std::string()) +
         " hidden=" + std::to_string(hidden) + " intermediate=" + std::to_string(intermediate);
}

GmmMemory gmm_host_memory(const GmmSpec& s, bool weights_given, bool acts_given) {
  GmmMemory m;
  const double es = static_cast<double>(s.elem_bytes());
  const double rows = static_cast<double>(s.max_rows());
  if (!weights_given) m.weights = static_cast<double>(s.e_local()) * static_cast<double>(s.weight_bytes_per_expert());
  if (!acts_given) m.activations = rows * static_cast<double>(s.k_dim()) * es;
  // The reference and one backend's outputs live side by side.
  m.outputs = 2 * rows * static_cast<double>(s.n_out()) * static_cast<double>(dtype_size(s.out_dtype()));
  return m;
}

double host_memory_available() { return host_memory_limit().bytes; }

void check_host_memory(const GmmSpec& s, const GmmMemory& need) {
  const MemoryLimit avail = host_memory_limit();
  // Headroom for the process itself, the reference's per-expert scratch and the rest of the machine.
  const double usable = 0.85 * avail.bytes - 0.5e9;
  require_memory("gmm for " + s.describe(), {{std::string(s.weight_name()) + " weights for " + std::to_string(s.e_local()) + " experts", need.weights},
                                             {"activations and outputs", need.activations + need.outputs}},
                 usable, avail, "host", kShardAdvice);
}

}  // namespace moe
