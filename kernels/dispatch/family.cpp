// The dispatch family: align + ragged gather with top-k fan-out (DESIGN.md 1.2).
#include "dispatch/family.hpp"

#include <algorithm>
#include <cmath>

#include "common/fp8_validate.hpp"
#include "common/problem_params.hpp"
#include "common/routing_gen.hpp"
#include "common/validate.hpp"
#include "dispatch/backends.hpp"
#include "dispatch/plan.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

const Tensor& need_input(const TensorMap& in, const char* name) {
  auto it = in.find(name);
  if (it == in.end()) throw Error(std::string("dispatch: input '") + name + "' is missing");
  return it->second;
}

// The quantizing gather's edge cases, planted in random tokens' groups: all zero (amax 0),
// a NaN (skipped by amax, kept as a NaN code), an infinity (scale inf: finite codes 0, NaN),
// and values at and beyond 448 next to small ones.
void plant_fp8_edges(Tensor& x, Rng& rng) {
  const std::int64_t T = x.shape()[0], D = x.shape()[1], G = D / 128;
  auto group = [&](std::int64_t t, std::int64_t g) { return t * D + g * 128; };
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t g = rng.below(G), at = group(t, g) + rng.below(128);
    switch (rng.below(8)) {
      case 0:
        for (std::int64_t i = 0; i < 128; ++i) x.set(group(t, g) + i, 0.0);
        break;
      case 1: x.set(at, std::nan("")); break;
      case 2: x.set(at, rng.below(2) ? HUGE_VAL : -HUGE_VAL); break;
      case 3: x.set(at, 448.0); break;
      case 4: x.set(at, -3000.0); break;
      default: break;  // most tokens stay plain random
    }
  }
}

void make_inputs(const Params& p, const InputOptions& opt, TensorMap& in) {
  const DispatchSpec s = DispatchSpec::parse(p);
  if (!in.count("ids")) {
    Rng rng(opt.seed);
    in.emplace("ids", routing_ids(s.T, s.E, s.k, s.S, opt, rng));
  }
  const Tensor& ids = in.at("ids");
  if (ids.dtype() != DType::i32 || ids.shape() != Shape{s.T, s.K})
    throw Error("dispatch: ids must be int32 [" + std::to_string(s.T) + ", " + std::to_string(s.K) +
                "] (tokens, topk+shared), got " + std::string(dtype_name(ids.dtype())) + shape_str(ids.shape()));
  // Kernels drop such ids safely, but given ones are a user mistake worth naming.
  check_ids_in_range(ids, s.E_total);
  if (!in.count("x")) {
    Rng rng(opt.seed ^ 0x78A5D1E5ull);  // its own stream: giving ids does not change x
    in.emplace("x", random_tensor(s.dtype, {s.T, s.D}, rng));
    if (s.fp8) plant_fp8_edges(in.at("x"), rng);
  }
}

std::vector<TensorSpec> output_specs(const Params& p, const TensorMap& in) {
  const DispatchSpec s = DispatchSpec::parse(p);
  const Tensor& ids = need_input(in, "ids");
  if (ids.numel() != s.slots()) throw Error("dispatch: ids has " + std::to_string(ids.numel()) + " values, expected tokens*(topk+shared) = " + std::to_string(s.slots()));
  const std::int64_t R = dispatch_rows(ids.data<std::int32_t>(), s.slots(), {s.E_total, s.e0, s.e1, s.A});
  std::vector<TensorSpec> v = {
      {"offsets", DType::i32, {s.local() + 1}, "first row of each local expert, padded to align; last = R"},
      {"src", DType::i32, {R}, "slot t*K+j of each sorted row; -1 on padding rows"},
      {"dst", DType::i32, {s.slots()}, "row of each slot; -1 when its expert is not local"},
      {"x_sorted", s.out_dtype(), {R, s.D}, s.fp8 ? "x rows gathered in expert order as e4m3 codes; padding rows zero"
                                                    : "x rows gathered in expert order; padding rows zero"},
  };
  if (s.fp8) v.push_back({"x_scale", DType::f32, {R, s.D / 128}, "fp32 scale of each row's 128-wide groups (K-major)"});
  return v;
}

Cost cost(const Params& p, const TensorMap& in) {
  const DispatchSpec s = DispatchSpec::parse(p);
  const Tensor& ids = need_input(in, "ids");
  const ExpertRange range{s.E_total, s.e0, s.e1, s.A};
  std::int64_t routed = 0;
  for (std::int64_t f = 0; f < s.slots(); ++f) routed += range.local(ids.data<std::int32_t>()[f]) >= 0;
  const std::int64_t R = dispatch_rows(ids.data<std::int32_t>(), s.slots(), range);
  const double es = static_cast<double>(dtype_size(s.dtype)), os = static_cast<double>(dtype_size(s.out_dtype()));
  Cost c;
  // ids read, dst + src + offsets written, one x row read per routed slot, every x_sorted row
  // (and, fp8, its scales) written.
  c.bytes = 4.0 * (2 * s.slots() + R + s.local() + 1) + s.D * (es * routed + os * R) + (s.fp8 ? 4.0 * R * s.D / 128 : 0.0);
  c.flops = 0;
  return c;
}

// cost() with uniform routing: a slot is local with probability local/E_total, and half an
// alignment block of padding per local expert.
Cost estimate(const Params& p) {
  const DispatchSpec s = DispatchSpec::parse(p);
  const double routed = static_cast<double>(s.slots()) * static_cast<double>(s.local()) / static_cast<double>(s.E_total);
  const double R = std::min(static_cast<double>(s.max_rows()), routed + 0.5 * static_cast<double>(s.local() * (s.A - 1)));
  const double es = static_cast<double>(dtype_size(s.dtype)), os = static_cast<double>(dtype_size(s.out_dtype()));
  return Cost{4.0 * (2.0 * static_cast<double>(s.slots()) + R + static_cast<double>(s.local()) + 1) +
                  static_cast<double>(s.D) * (es * routed + os * R) + (s.fp8 ? R * static_cast<double>(s.D) / 32 : 0.0),
              0};
}

}  // namespace

const FamilyDesc& dispatch_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "dispatch";
    f.summary = "align + ragged gather: ids -> per-expert padded offsets, src/dst maps, x_sorted (top-k fan-out)";
    f.problem_params = {pp::tokens(), pp::dtype("bf16", {"f32", "bf16", "f16", "fp8"}), pp::experts(), pp::topk(),
                        pp::shared(), pp::hidden(), pp::align(), pp::expert_begin(), pp::expert_end(),
                        pp::scale_fmt()};
    f.check_problem = [](const Params& p) { DispatchSpec::parse(p); };
    f.footprint = [](const Params& p) {
      const DispatchSpec s = DispatchSpec::parse(p);
      const double es = static_cast<double>(dtype_size(s.dtype)), R = static_cast<double>(s.max_rows());
      const double D = static_cast<double>(s.D), slots = static_cast<double>(s.slots());
      const double os = static_cast<double>(dtype_size(s.out_dtype())) + (s.fp8 ? 4.0 / 128 : 0.0);
      return Footprint{{{"x", static_cast<double>(s.T) * D * es}, {"ids", slots * 4}},
                       R * D * os + (R + slots + static_cast<double>(s.local()) + 1) * 4};
    };
    f.input_specs = [](const Params& p) {
      const DispatchSpec s = DispatchSpec::parse(p);
      return std::vector<TensorSpec>{
          {"x", s.dtype, {s.T, s.D}, "activations"},
          {"ids", DType::i32, {s.T, s.K}, "expert of each slot: k routed, then the shared ids E..E+S-1"},
      };
    };
    f.make_inputs = make_inputs;
    f.output_specs = output_specs;
    f.reference = [](const Params& p, const TensorMap& in, TensorMap& out) {
      dispatch_reference(DispatchSpec::parse(p), in, out);
    };
    f.validate = [](const Params& p, const TensorMap&, const TensorMap& got, const TensorMap& ref) {
      const DispatchSpec s = DispatchSpec::parse(p);
      std::vector<Check> checks;
      for (const char* n : {"offsets", "src", "dst"}) checks.push_back(compare_exact(n, got.at(n), ref.at(n)));
      if (!s.fp8) {
        checks.push_back(compare_exact("x_sorted", got.at("x_sorted"), ref.at("x_sorted")));
      } else {
        // Scales and codes as DESIGN.md 1.6 allows (a GPU may divide by a reciprocal).
        for (Check& c : check_quantized("x_sorted", got.at("x_sorted"), got.at("x_scale"), ref.at("x_sorted"),
                                        ref.at("x_scale"), s.ue8m0))
          checks.push_back(std::move(c));
      }
      return make_validation(std::move(checks));
    };
    f.cost = cost;
    f.estimate = estimate;
    f.backends = {dispatch_cpu_backend(), dispatch_cuda_backend(), dispatch_emu_backend()};
    return f;
  }();
  return d;
}

}  // namespace moe
