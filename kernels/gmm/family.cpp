#include "gmm/family.hpp"

#include <cmath>
#include <string>

#include "common/problem_params.hpp"
#include "gmm/detail.hpp"
#include "gmm/emu.hpp"
#include "moe/error.hpp"

namespace moe {

namespace gmm {

std::vector<ParamSpec> problem_params() {
  ParamSpec stage;
  stage.name = "stage";
  stage.kind = ParamKind::Choice;
  stage.default_value = std::string("up");
  stage.choices = {"up", "down"};
  stage.help = "up: h = silu(x*gate^T) * (x*up^T) with w13; down: y = h*w2^T";
  ParamSpec rw;
  rw.name = "routed_weight";
  rw.kind = ParamKind::Bool;
  rw.default_value = std::int64_t{0};
  rw.min = 0;
  rw.max = 1;
  rw.help = "down only: multiply each output row by its router weight (row_weight [R] f32)";
  std::vector<ParamSpec> v = {pp::tokens(),       pp::dtype("bf16", {"bf16", "f16", "fp8", "mxfp4", "int4"}),
                              pp::experts(),      pp::topk(),
                              pp::shared(),       pp::hidden(),
                              pp::intermediate(), pp::align(),
                              pp::expert_begin(), pp::expert_end(),
                              stage,              rw,
                              pp::scale_fmt(),    pp::w4_group(),
                              pp::zero_point()};
  for (ParamSpec& p : pp::expert_fn()) v.push_back(std::move(p));
  return v;
}

std::vector<TensorSpec> input_specs(const GmmSpec& s) {
  const std::int64_t E = s.e_local(), D = s.hidden, I = s.intermediate;
  std::vector<TensorSpec> v;
  v.push_back({"offsets", DType::i32, {E + 1},
               "row segments of the local experts, each padded to a multiple of align; offsets[0]=0, offsets[E]=R"});
  if (!s.down) {
    v.push_back({"x_sorted", s.dtype, {-1, D}, "dispatched rows, grouped by expert; padding rows are zero"});
    if (!s.w4())
      v.push_back({"w13", s.dtype, {E, 2 * I, D},
                   s.interleaved ? "gate and up rows alternating in blocks of w13_block, K-contiguous"
                                 : "rows 0..I-1 gate, I..2I-1 up, K-contiguous"});
    if (s.bias13) v.push_back({"bias13", s.dtype, {E, 2 * I}, "gate|up bias of each expert, in w13's row order"});
  } else {
    v.push_back({"h", s.dtype, {-1, I}, "the up stage's output rows"});
    if (!s.w4()) v.push_back({"w2", s.dtype, {E, D, I}, "down projection, K-contiguous"});
    if (s.bias2) v.push_back({"bias2", s.dtype, {E, D}, "output bias of each expert, added before the routed weight"});
    if (s.routed_weight) v.push_back({"row_weight", DType::f32, {-1}, "router weight of each row, 0 on padding rows"});
  }
  if (s.fp8) {
    v.push_back({s.act_scale_name(), DType::f32, {-1, s.k_groups()},
                 "fp32 scale of each row's 128-wide K groups (K-major)"});
    v.push_back({s.weight_scale_name(), DType::f32, {E, s.n_w() / 128, s.k_groups()}, "fp32 scale of each 128x128 block"});
  }
  if (s.w4())
    for (TensorSpec& t : w4_weight_specs(s)) v.push_back(std::move(t));
  return v;
}

std::vector<TensorSpec> output_specs(const GmmSpec& s, std::int64_t rows) {
  if (!s.down) {
    std::vector<TensorSpec> v = {{"h", s.dtype, {rows, s.intermediate}, s.swiglu_oai ? "swiglu_oai(gate, up)" : "silu(gate) * up"}};
    if (s.fp8) v.push_back({"h_scale", DType::f32, {rows, s.intermediate / 128}, "fp32 scale of each row's 128-wide groups"});
    return v;
  }
  return {{"y_sorted", s.out_dtype(), {rows, s.hidden}, s.routed_weight ? "h * w2^T * row_weight" : "h * w2^T"}};
}

std::int64_t input_rows(const GmmSpec& s, const TensorMap& in) {
  auto off = in.find("offsets");
  if (off != in.end() && off->second.numel() == s.e_local() + 1)
    return off->second.data<std::int32_t>()[s.e_local()];
  auto act = in.find(s.act_name());
  if (act != in.end() && !act->second.shape().empty()) return act->second.shape()[0];
  throw Error("gmm: the inputs have neither offsets nor " + std::string(s.act_name()) + ": cannot tell the row count");
}

// fp8 weights (docs/fp8.md, "Invalid weights"): no NaN code, every block scale positive and
// finite. A NaN or a zero scale would reach the padding rows' zero products as NaN on some
// backends and not others; a negative scale flips a block's sign. Refused, naming the entry.
void check_fp8_weights(const GmmSpec& s, const TensorMap& in) {
  const Tensor& w = in.at(s.weight_name());
  const auto* codes = w.data<std::uint8_t>();
  for (std::int64_t i = 0; i < w.numel(); ++i)
    if ((codes[i] & 0x7F) == 0x7F)
      throw Error(std::string("gmm: ") + s.weight_name() + " holds a NaN code (0x" + (codes[i] == 0xFF ? "FF" : "7F") +
                  ") at flat index " + std::to_string(i) + ": fp8 weights must be finite e4m3 codes");
  const Tensor& sc = in.at(s.weight_scale_name());
  const auto* v = sc.data<float>();
  for (std::int64_t i = 0; i < sc.numel(); ++i)
    if (!(v[i] > 0.0f) || !std::isfinite(v[i]))
      throw Error(std::string("gmm: ") + s.weight_scale_name() + " at flat index " + std::to_string(i) + " is " +
                  std::to_string(v[i]) + ": weight block scales must be positive and finite");
}

std::string expert_fn_invalid_reason(const GmmSpec& s) {
  if (s.plain_expert_fn()) return {};
  return "the engines' kernels moebench drives compute silu(gate)*up on split w13 without expert biases, not " +
         s.expert_fn_str() + ": use moebench's own kernels (--backend cuda, kernel=mma) or --backend cpu for this problem";
}

// Cross-tensor consistency that check_tensors (shapes one by one) cannot see.
void check_inputs(const GmmSpec& s, const TensorMap& in) {
  if (s.fp8) check_fp8_weights(s, in);
  if (s.w4()) check_w4_weights(s, in);
  const std::int64_t R = in.at(s.act_name()).shape()[0];
  check_offsets(s, in.at("offsets"), R);
  if (s.routed_weight && in.at("row_weight").numel() != R)
    throw Error("gmm: row_weight has " + std::to_string(in.at("row_weight").numel()) + " entries, " +
                std::string(s.act_name()) + " has " + std::to_string(R) + " rows");
  if (s.fp8 && in.at(s.act_scale_name()).shape()[0] != R)
    throw Error(std::string("gmm: ") + s.act_scale_name() + " has " + std::to_string(in.at(s.act_scale_name()).shape()[0]) +
                " rows, " + s.act_name() + " has " + std::to_string(R) + ": give the scales of the same rows");
}

}  // namespace gmm

const FamilyDesc& gmm_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "gmm";
    f.summary = "fused grouped matmul of the routed experts: up (w13, silu(gate)*up) or down (w2, routed weight)";
    f.problem_params = gmm::problem_params();
    f.check_problem = [](const Params& p) {
      const GmmSpec s = GmmSpec::parse(p);
      check_host_memory(s, gmm_host_memory(s));
    };
    f.input_specs = [](const Params& p) { return gmm::input_specs(GmmSpec::parse(p)); };
    f.make_inputs = [](const Params& p, const InputOptions& opt, TensorMap& in) {
      gmm::make_inputs(GmmSpec::parse(p), opt, in);
    };
    f.output_specs = [](const Params& p, const TensorMap& in) {
      const GmmSpec s = GmmSpec::parse(p);
      return gmm::output_specs(s, gmm::input_rows(s, in));
    };
    f.reference = [](const Params& p, const TensorMap& in, TensorMap& out) {
      // kReferenceEveryRow is not a problem parameter: only a caller that needs whole
      // outputs (the layer's reference) sets it.
      Params q = p;
      const bool every_row = q.has(kReferenceEveryRow);
      q.erase(kReferenceEveryRow);
      const GmmSpec s = GmmSpec::parse(q);
      gmm::check_inputs(s, in);
      gmm::reference(s, in, out, every_row);
    };
    f.validate = [](const Params& p, const TensorMap& in, const TensorMap& got, const TensorMap& ref) {
      return gmm::validate(GmmSpec::parse(p), in, got, ref);
    };
    f.cost = [](const Params& p, const TensorMap& in) { return gmm::cost(GmmSpec::parse(p), in); };
    f.estimate = [](const Params& p) { return gmm::estimate(GmmSpec::parse(p)); };
    f.footprint = [](const Params& p) {
      const GmmSpec s = GmmSpec::parse(p);
      const GmmMemory m = gmm_host_memory(s);
      return Footprint{{{s.weight_name(), m.weights}, {s.act_name(), m.activations}}, m.outputs / 2};
    };
    f.backends.push_back(gmm::cpu_backend());
    f.backends.push_back(gmm::cuda_backend());
    f.backends.push_back(gmm::emu_backend());
    return f;
  }();
  return d;
}

}  // namespace moe
