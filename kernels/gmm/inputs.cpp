#include <algorithm>
#include <cmath>
#include <thread>

#include "common/parallel.hpp"
#include "common/rng.hpp"
#include "common/routing_gen.hpp"
#include "gmm/detail.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace {

// Normal values in fixed chunks, each with its own Rng: the tensor is the same for any thread
// count, and the preset-sized weights (10^8..10^10 values) fill on every core.
void fill_normal(Tensor& t, std::uint64_t seed, std::uint64_t tag, double scale) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t n = t.numel(), chunks = (n + kChunk - 1) / kChunk;
  const DType dt = t.dtype();
  const auto fscale = static_cast<float>(scale);
  auto* out = t.data<std::uint16_t>();
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  parallel_for(chunks, threads, 1, [&](std::int64_t cb, std::int64_t ce) {
    for (std::int64_t c = cb; c < ce; ++c) {
      Rng rng(seed * 0x9E3779B97F4A7C15ull + tag * 0xD1B54A32D192ED03ull + static_cast<std::uint64_t>(c));
      const std::int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      for (std::int64_t i = b; i < e; i += 2) {
        // Box-Muller in float, both values used, two 24-bit uniforms from one draw: the
        // preset weights are 10^9 values, and bf16 keeps 8 bits of each anyway.
        const std::uint64_t x = rng.next();
        const float u1 = (static_cast<float>(x >> 40) + 0.5f) * 0x1.0p-24f;
        const float u2 = static_cast<float>(x & 0xFFFFFF) * 0x1.0p-24f;
        const float r = std::sqrt(-2.0f * std::log(u1)) * fscale, a = 6.2831853f * u2;
        const float v[2] = {r * std::cos(a), r * std::sin(a)};
        for (int j = 0; j < 2 && i + j < e; ++j)
          out[i + j] = dt == DType::bf16 ? float_to_bf16(v[j]) : float_to_f16(v[j]);
      }
    }
  });
}

}  // namespace

void check_offsets(const GmmSpec& s, const Tensor& off, std::int64_t rows) {
  const std::int64_t E = s.e_local();
  if (off.dtype() != DType::i32 || off.shape() != Shape{E + 1})
    throw Error("gmm: offsets must be i32[" + std::to_string(E + 1) + "] (local experts + 1), got " +
                std::string(dtype_name(off.dtype())) + shape_str(off.shape()));
  const auto* o = off.data<std::int32_t>();
  if (o[0] != 0) throw Error("gmm: offsets[0] is " + std::to_string(o[0]) + ", must be 0");
  for (std::int64_t e = 0; e < E; ++e)
    if (o[e + 1] < o[e])
      throw Error("gmm: offsets decrease at expert " + std::to_string(e) + " (" + std::to_string(o[e]) + " -> " +
                  std::to_string(o[e + 1]) + "): each expert's segment must be [offsets[e], offsets[e+1])");
  if (o[E] > s.max_rows())
    throw Error("gmm: offsets end at " + std::to_string(o[E]) + " rows, more than the " +
                std::to_string(s.max_rows()) + " that " + std::to_string(s.tokens) +
                " tokens can route here (tokens x slots + padding): raise --tokens to match the offsets");
  if (rows >= 0 && o[E] != rows)
    throw Error("gmm: offsets end at " + std::to_string(o[E]) + " but the activations have " + std::to_string(rows) +
                " rows: give matching offsets and " + s.act_name());
}

void check_host_offsets(const std::int32_t* o, std::int64_t n, std::int64_t rows) {
  for (std::int64_t e = 0; e < n; ++e)
    if (o[e] < (e ? o[e - 1] : 0) || o[e] > rows)
      throw Error("gmm: offsets must rise from 0 to at most the " + std::to_string(rows) + " rows given, got offsets[" +
                  std::to_string(e) + "] = " + std::to_string(o[e]) + ": pass dispatch's offsets");
}

std::vector<char> zero_rows(const Tensor& act) {
  const std::int64_t R = act.shape()[0], C = act.shape()[1];
  std::vector<char> z(static_cast<std::size_t>(R), 1);
  const bool half = dtype_size(act.dtype()) == 2, byte = dtype_size(act.dtype()) == 1;
  const auto* a = act.data<std::uint16_t>();
  const auto* a8 = act.data<std::uint8_t>();
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c)
      if (byte ? (a8[r * C + c] & 0x7F) != 0
               : half ? (a[r * C + c] & 0x7FFF) != 0 : act.get(r * C + c) != 0.0) {  // +0 and -0 are both zero
        z[r] = 0;
        break;
      }
  return z;
}

void make_inputs(const GmmSpec& s, const InputOptions& opt, TensorMap& in) {
  const std::int64_t E = s.e_local();
  const bool have_off = in.count("offsets") != 0, have_act = in.count(s.act_name()) != 0;
  const bool have_w = in.count(s.weight_name()) != 0;
  check_host_memory(s, gmm_host_memory(s, have_w, have_act));
  if (have_act && !have_off)
    throw Error(std::string("gmm: ") + s.act_name() + " was given without offsets: give offsets [" +
                std::to_string(E + 1) + "] (i32) too, so the rows' experts are known");
  if (s.fp8)
    for (auto [t, scale] : {std::pair{s.act_name(), s.act_scale_name()}, std::pair{s.weight_name(), s.weight_scale_name()}})
      if (in.count(t) != in.count(scale))
        throw Error(std::string("gmm: fp8 ") + (in.count(t) ? t : scale) + " was given without " +
                    (in.count(t) ? scale : t) + ": give both (the codes and their scales) or neither");
  if (s.w4())
    for (const TensorSpec& t : w4_weight_specs(s))
      if (in.count(t.name) != in.count(s.weight_name()))
        throw Error(std::string("gmm: ") + s.weight_name() + (in.count(t.name) ? " was not given with " : " was given without ") +
                    t.name + ": give the " + (s.wq == WeightFormat::mxfp4 ? "mxfp4" : "int4") +
                    " weights' tensors together (codes, scales" + (s.zero_point ? ", zero points" : "") + ") or none");
  if (have_act) {
    const Tensor& a = in.at(s.act_name());
    if (a.shape().size() != 2)
      throw Error(std::string("gmm: ") + s.act_name() + " must be 2-D [rows, " + std::to_string(s.k_dim()) +
                  "], got " + shape_str(a.shape()));
  }

  // Rows per local expert: real ones from the routing, then the pad to A.
  std::vector<std::int64_t> real(E, -1);
  if (!have_off) {
    Rng rng(opt.seed);
    const Tensor ids = routing_ids(s.tokens, s.experts, s.topk, s.shared, opt, rng);
    std::fill(real.begin(), real.end(), 0);
    const auto* id = ids.data<std::int32_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i)
      if (id[i] >= s.expert_begin && id[i] < s.expert_end) ++real[id[i] - s.expert_begin];
    Tensor off(DType::i32, {E + 1});
    auto* o = off.data<std::int32_t>();
    for (std::int64_t e = 0; e < E; ++e) o[e + 1] = static_cast<std::int32_t>(o[e] + (real[e] + s.align - 1) / s.align * s.align);
    in["offsets"] = std::move(off);
  }
  const Tensor& off = in.at("offsets");
  check_offsets(s, off, have_act ? in.at(s.act_name()).shape()[0] : -1);
  const auto* o = off.data<std::int32_t>();
  const std::int64_t R = o[E];

  if (!have_act && s.fp8) {
    std::vector<char> pad(static_cast<std::size_t>(R), 0);
    if (!have_off)
      for (std::int64_t e = 0; e < E; ++e) std::fill(pad.begin() + o[e] + real[e], pad.begin() + o[e + 1], char{1});
    make_fp8_activations(s, R, pad, opt.seed, in);
  } else if (!have_act) {
    // Unit-normal activations; the weights carry 1/sqrt(k) so every product stays O(1).
    Tensor a(s.dtype, {R, s.k_dim()});
    fill_normal(a, opt.seed, 1, 1.0);
    if (!have_off) {
      auto* p = a.data<std::uint16_t>();
      for (std::int64_t e = 0; e < E; ++e)
        std::fill(p + (o[e] + real[e]) * s.k_dim(), p + o[e + 1] * s.k_dim(), std::uint16_t{0});
    }
    in[s.act_name()] = std::move(a);
  }
  if (!have_w && s.fp8) {
    make_fp8_weights(s, opt.seed, in);
  } else if (!have_w && s.w4()) {
    make_w4_weights(s, opt.seed, in);
  } else if (!have_w) {
    Tensor w(s.dtype, {E, s.n_w(), s.k_dim()});
    fill_normal(w, opt.seed, 2, 1.0 / std::sqrt(static_cast<double>(s.k_dim())));
    in[s.weight_name()] = std::move(w);
  }
  if (s.biased() && !in.count(s.bias_name())) {
    // O(1) biases, as the gate|up and output sums are: they move gate and up across the clamps.
    Tensor b(s.dtype, {E, s.down ? s.hidden : 2 * s.intermediate});
    fill_normal(b, opt.seed, s.down ? 4 : 3, 0.5);
    in[s.bias_name()] = std::move(b);
  }
  if (s.routed_weight && !in.count("row_weight")) {
    const auto pad = zero_rows(in.at(s.act_name()));
    Tensor rw(DType::f32, {R});
    Rng rng(opt.seed * 31 + 3);
    for (std::int64_t r = 0; r < R; ++r) rw.data<float>()[r] = pad[r] ? 0.0f : static_cast<float>(rng.uniform(0.05, 1.0));
    in["row_weight"] = std::move(rw);
  }
}

}  // namespace moe::gmm
