// The combine family: weighted gather-reduce of expert outputs back to tokens (DESIGN.md 1.3).
#include "combine/family.hpp"

#include <limits>

#include "combine/backends.hpp"
#include "common/problem_params.hpp"
#include "common/routing_gen.hpp"
#include "common/validate.hpp"
#include "dispatch/plan.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

void expect(const Tensor& t, const char* name, DType dtype, const Shape& shape) {
  if (t.dtype() != dtype || t.shape() != shape)
    throw Error(std::string("combine: ") + name + " must be " + std::string(dtype_name(dtype)) + shape_str(shape) +
                ", got " + std::string(dtype_name(t.dtype())) + shape_str(t.shape()));
}

// A few weights exactly 0 (about one slot in eight, at least one): those slots must be
// selected away, and make_inputs puts NaN in their rows to prove it.
void zero_some(Tensor& w, Rng& rng) {
  auto* v = w.data<float>();
  bool any = false;
  for (std::int64_t f = 0; f < w.numel(); ++f)
    if (rng.below(8) == 0) v[f] = 0.0f, any = true;
  if (!any && w.numel() >= 2) v[rng.below(w.numel())] = 0.0f;
}

void nan_rows(Tensor& y, std::int64_t D, const std::vector<bool>& used) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(used.size()); ++r)
    if (!used[r])
      for (std::int64_t d = 0; d < D; ++d) y.set(r * D + d, nan);
}

void make_inputs(const Params& p, const InputOptions& opt, TensorMap& in) {
  const CombineSpec s = CombineSpec::parse(p);
  const std::int64_t N = s.slots();
  if (!in.count("weights")) {
    Rng rng(opt.seed ^ 0x57E1647Bull);
    Tensor w = routing_weights(s.T, s.k, s.S, rng);
    zero_some(w, rng);
    in.emplace("weights", std::move(w));
  }
  expect(in.at("weights"), "weights", DType::f32, {s.T, s.K});
  const auto* w = in.at("weights").data<float>();

  if (s.dense) {
    if (!in.count("y")) {
      Rng rng(opt.seed ^ 0x9D1A7E5Full);
      Tensor y = random_tensor(s.dtype, {s.T, s.K, s.D}, rng);
      std::vector<bool> used(N);
      for (std::int64_t f = 0; f < N; ++f) used[f] = w[f] != 0.0f;
      nan_rows(y, s.D, used);
      in.emplace("y", std::move(y));
    }
  } else {
    std::int64_t R = -1;
    if (auto it = in.find("y_sorted"); it != in.end()) {
      if (it->second.shape().size() != 2 || it->second.shape()[1] != s.D)
        throw Error("combine: y_sorted must be [R, " + std::to_string(s.D) + "], got " + shape_str(it->second.shape()));
      R = it->second.shape()[0];
    }
    if (!in.count("dst")) {
      // Route like dispatch does (same plan code), over all experts.
      Rng rng(opt.seed);
      const Tensor ids = routing_ids(s.T, s.E, s.k, s.S, opt, rng);
      check_ids_in_range(ids, s.E + s.S);
      const DispatchPlan plan = plan_dispatch(ids.data<std::int32_t>(), N, {s.E + s.S, 0, s.E + s.S, s.A});
      if (R >= 0 && R != plan.rows())
        throw Error("combine: the given y_sorted has " + std::to_string(R) + " rows, the generated routing needs " +
                    std::to_string(plan.rows()) + ": give dst as well");
      R = plan.rows();
      Tensor dst(DType::i32, {N});
      std::copy(plan.dst.begin(), plan.dst.end(), dst.data<std::int32_t>());
      in.emplace("dst", std::move(dst));
    }
    const Tensor& dst = in.at("dst");
    expect(dst, "dst", DType::i32, {N});
    const auto* dv = dst.data<std::int32_t>();
    if (R < 0) {
      // y_sorted is made as long as dst needs: a stray huge value must not size a huge tensor.
      R = 0;
      for (std::int64_t f = 0; f < N; ++f) R = std::max<std::int64_t>(R, dv[f] + 1);
      if (R > s.max_rows()) {
        std::int64_t f = 0;
        while (dv[f] < s.max_rows()) ++f;
        throw Error("combine: dst[" + std::to_string(f) + "] = " + std::to_string(dv[f]) +
                    " is not a row of this problem: dispatch makes at most " + std::to_string(s.max_rows()) +
                    " rows (tokens*(topk+shared) + (experts+shared)*(align-1)); dst must be dispatch's map of slot "
                    "t*K+j to a row of y_sorted, -1 for none");
      }
    }
    std::int64_t bad = 0, first = -1;
    for (std::int64_t f = 0; f < N; ++f)
      if (dv[f] < -1 || dv[f] >= R) bad++, first = first < 0 ? f : first;
    if (bad)
      throw Error("combine: dst has " + std::to_string(bad) + " values outside [-1," + std::to_string(R) +
                  "): first at [" + std::to_string(first) + "] = " + std::to_string(dv[first]) +
                  "; dst must be dispatch's map of slot t*K+j to a row of y_sorted, -1 for none");
    if (!in.count("y_sorted")) {
      Rng rng(opt.seed ^ 0x9D1A7E5Full);
      Tensor y = random_tensor(s.dtype, {R, s.D}, rng);
      std::vector<bool> used(R);
      for (std::int64_t f = 0; f < N; ++f)
        if (dv[f] >= 0 && w[f] != 0.0f) used[dv[f]] = true;
      nan_rows(y, s.D, used);  // padding rows and rows of zero-weight slots
      in.emplace("y_sorted", std::move(y));
    }
  }
  if (s.rmsnorm) {
    if (!in.count("residual")) {
      Rng rng(opt.seed ^ 0x4E5D0A11ull);
      in.emplace("residual", random_tensor(s.dtype, {s.T, s.D}, rng));
    }
    if (!in.count("gamma")) {
      Rng rng(opt.seed ^ 0x6A33A700ull);
      Tensor g(s.dtype, {s.D});
      for (std::int64_t d = 0; d < s.D; ++d) g.set(d, 1.0 + 0.25 * rng.normal());
      in.emplace("gamma", std::move(g));
    }
  }
}

std::vector<TensorSpec> input_specs(const Params& p) {
  const CombineSpec s = CombineSpec::parse(p);
  std::vector<TensorSpec> r;
  if (s.dense) {
    r.push_back({"y", s.dtype, {s.T, s.K, s.D}, "expert outputs per token and slot (TP layout)"});
  } else {
    r.push_back({"y_sorted", s.dtype, {-1, s.D}, "expert outputs in dispatch's row order"});
    r.push_back({"dst", DType::i32, {s.slots()}, "row of slot t*K+j in y_sorted, -1: none (dispatch's dst)"});
  }
  r.push_back({"weights", DType::f32, {s.T, s.K}, "router weights; 0 selects the slot away"});
  if (s.rmsnorm) {
    r.push_back({"residual", s.dtype, {s.T, s.D}, "residual stream the sum is added to"});
    r.push_back({"gamma", s.dtype, {s.D}, "rmsnorm weight"});
  }
  return r;
}

std::vector<TensorSpec> output_specs(const Params& p, const TensorMap&) {
  const CombineSpec s = CombineSpec::parse(p);
  std::vector<TensorSpec> r{{"out", s.out_dtype, {s.T, s.D}, s.rmsnorm ? "rmsnorm(residual_out) * gamma" : "weighted sum"}};
  if (s.rmsnorm) r.push_back({"residual_out", s.dtype, {s.T, s.D}, "residual + weighted sum"});
  return r;
}

Validation validate(const Params& p, const TensorMap&, const TensorMap& got, const TensorMap& ref) {
  const CombineSpec s = CombineSpec::parse(p);
  // With rmsnorm, out depends on residual_out rounded to dtype: an ulp there moves out by one too.
  const CombineTolerance to = combine_tolerance(s.rmsnorm ? s.dtype : s.out_dtype);
  std::vector<Check> checks{compare_close("out", got.at("out"), ref.at("out"), to.rel_l2, to.rtol, to.atol)};
  if (s.rmsnorm) {
    const CombineTolerance tr = combine_tolerance(s.dtype);
    checks.push_back(compare_close("residual_out", got.at("residual_out"), ref.at("residual_out"), tr.rel_l2, tr.rtol, tr.atol));
  }
  return make_validation(std::move(checks));
}

Cost cost(const Params& p, const TensorMap& in) {
  const CombineSpec s = CombineSpec::parse(p);
  const auto* w = in.at("weights").data<float>();
  const std::int64_t R = s.dense ? s.slots() : in.at("y_sorted").shape()[0];
  std::int64_t used = 0;
  for (std::int64_t f = 0; f < s.slots(); ++f) {
    const std::int64_t row = s.dense ? f : in.at("dst").data<std::int32_t>()[f];
    used += row >= 0 && row < R && w[f] != 0.0f;
  }
  const double es = static_cast<double>(dtype_size(s.dtype)), os = static_cast<double>(dtype_size(s.out_dtype));
  Cost c;
  c.bytes = es * used * s.D + 4.0 * s.slots() * (s.dense ? 1 : 2) + os * s.T * s.D;
  c.flops = 2.0 * used * s.D;
  if (s.rmsnorm) {
    c.bytes += es * (2.0 * s.T * s.D + s.D);  // residual in, residual_out out, gamma
    c.flops += 5.0 * s.T * s.D;
  }
  return c;
}

// cost() with every slot carrying a weight.
Cost estimate(const Params& p) {
  const CombineSpec s = CombineSpec::parse(p);
  const double es = static_cast<double>(dtype_size(s.dtype)), os = static_cast<double>(dtype_size(s.out_dtype));
  const double slots = static_cast<double>(s.slots()), TD = static_cast<double>(s.T) * static_cast<double>(s.D);
  Cost c{es * slots * static_cast<double>(s.D) + 4.0 * slots * (s.dense ? 1 : 2) + os * TD, 2.0 * slots * static_cast<double>(s.D)};
  if (s.rmsnorm) {
    c.bytes += es * (2.0 * TD + static_cast<double>(s.D));
    c.flops += 5.0 * TD;
  }
  return c;
}

}  // namespace

// One ulp of the stored type and a little: both sides round the same fp32/fp64 sum.
CombineTolerance combine_tolerance(DType t) {
  switch (t) {
    case DType::bf16: return {rel_l2_tolerance(t), 2e-2, 1e-5};
    case DType::f16: return {rel_l2_tolerance(t), 4e-3, 1e-5};
    default: return {rel_l2_tolerance(t), 5e-5, 1e-5};
  }
}

const FamilyDesc& combine_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "combine";
    f.summary = "gather-reduce: out[t] = sum_j w[t,j] * y[row of slot (t,j)], fp32 accumulation, optional fused "
                "residual add + RMSNorm";
    ParamSpec eps;
    eps.name = "eps";
    eps.kind = ParamKind::Float;
    eps.default_value = 1e-6;
    eps.help = "rmsnorm epsilon";
    f.problem_params = {pp::tokens(), pp::dtype("bf16", {"f32", "bf16", "f16"}), pp::experts(), pp::topk(),
                        pp::shared(), pp::hidden(), pp::align(),
                        choice_param("layout", "ragged", {"ragged", "dense"},
                               "ragged: y_sorted [R,D] read through dst; dense: y [T,K,D] (TP layout)"),
                        choice_param("out_dtype", "same", {"same", "f32"}, "type of out: the input dtype or f32"),
                        choice_param("epilogue", "none", {"none", "rmsnorm"},
                               "rmsnorm: residual += sum; out = rmsnorm(residual) * gamma (vLLM fused_add_rms_norm)"),
                        eps};
    f.check_problem = [](const Params& p) { CombineSpec::parse(p); };
    f.footprint = [](const Params& p) {
      const CombineSpec s = CombineSpec::parse(p);
      const double es = static_cast<double>(dtype_size(s.dtype)), T = static_cast<double>(s.T);
      const double D = static_cast<double>(s.D), slots = static_cast<double>(s.slots());
      const double rows = static_cast<double>(s.max_rows());
      Footprint fp{{{s.dense ? "y" : "y_sorted", (s.dense ? slots : rows) * D * es}, {"weights", slots * 4}},
                   T * D * static_cast<double>(dtype_size(s.out_dtype))};
      if (!s.dense) fp.inputs.push_back({"dst", slots * 4});
      if (s.rmsnorm) {
        fp.inputs.push_back({"residual", T * D * es});
        fp.outputs += T * D * es;
      }
      return fp;
    };
    f.input_specs = input_specs;
    f.make_inputs = make_inputs;
    f.output_specs = output_specs;
    f.reference = [](const Params& p, const TensorMap& in, TensorMap& out) {
      combine_reference(CombineSpec::parse(p), in, out);
    };
    f.validate = validate;
    f.cost = cost;
    f.estimate = estimate;
    f.backends = {combine_cpu_backend(), combine_cuda_backend(), combine_emu_backend()};
    return f;
  }();
  return d;
}

}  // namespace moe
