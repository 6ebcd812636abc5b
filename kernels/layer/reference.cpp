#include "layer/reference.hpp"

#include <cmath>
#include <cstring>

#include "common/validate.hpp"
#include "gmm/family.hpp"
#include "layer/family.hpp"
#include "layer/stages.hpp"

namespace moe {

namespace {

bool is_fp8(const Params& L) { return L.s("dtype") == "fp8"; }

}  // namespace

std::vector<std::int64_t> reference_tokens(std::int64_t T) {
  constexpr std::int64_t kMax = 16;
  std::vector<std::int64_t> t;
  for (std::int64_t i = 0; i < std::min(T, kMax); ++i) t.push_back(T <= kMax ? i : i * (T - 1) / (kMax - 1));
  return t;
}

static Tensor take_rows(const Tensor& src, const std::vector<std::int64_t>& rows) {
  Shape shape = src.shape();
  shape[0] = static_cast<std::int64_t>(rows.size());
  Tensor t(src.dtype(), shape);
  const std::size_t row_bytes = src.shape()[0] ? src.nbytes() / src.shape()[0] : 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<std::byte*>(t.raw()) + i * row_bytes,
                static_cast<const std::byte*>(src.raw()) + rows[i] * row_bytes, row_bytes);
  return t;
}

// Each token's output depends only on its own logits and activations, so a sub-batch of
// sampled tokens (alignment 1: padding does not change the math) gives their exact outputs
// through the stage references, affordably; the other rows stay NaN (not computed).
void layer_reference(const Params& L, const TensorMap& in, TensorMap& out) {
  const auto tokens = reference_tokens(L.i("tokens"));
  Params sub = L;
  sub.set("tokens", static_cast<std::int64_t>(tokens.size())).set("align", std::int64_t{1});
  // The stages read the weights and each other's outputs through views: no copy of the weights.
  TensorMap all;
  for (auto& [k, v] : in) all[k] = Tensor::borrow(v);
  all["logits"] = take_rows(in.at("logits"), tokens);
  all["x"] = take_rows(in.at("x"), tokens);
  for (const Stage& s : layer_stages(sub)) {
    const FamilyDesc& f = family(s.family);
    TensorMap si;
    for (auto& spec : f.input_specs(s.problem)) si[spec.name] = Tensor::borrow(all.at(spec.name));
    TensorMap so = allocate(f.output_specs(s.problem, si));
    Params problem = s.problem;
    if (s.family == "gmm") problem.set(kReferenceEveryRow, std::int64_t{1});
    f.reference(problem, si, so);
    for (auto& [k, v] : so) all[k] = std::move(v);
  }
  Tensor& o = out.at("out");
  const Tensor& got = all.at("out");
  const std::int64_t D = L.i("hidden");
  for (std::int64_t i = 0; i < o.numel(); ++i) o.set(i, std::nan(""));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    for (std::int64_t d = 0; d < D; ++d) o.set(tokens[i] * D + d, got.get(static_cast<std::int64_t>(i) * D + d));
}

Validation layer_validate(const Params& L, const TensorMap& got_map, const TensorMap& ref_map) {
  const Tensor& got = got_map.at("out");
  const Tensor& ref = ref_map.at("out");
  const auto tokens = reference_tokens(L.i("tokens"));
  // Every element must be written and finite; the sampled tokens must match the reference.
  Check whole;
  whole.tensor = "out (every token written, finite)";
  const std::size_t es = dtype_size(got.dtype());
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const bool unwritten = is_poison(got.dtype(), static_cast<const std::byte*>(got.raw()) + i * es);
    if (unwritten) ++whole.unwritten;
    else if (!std::isfinite(got.get(i))) ++whole.nans;
  }
  whole.ok = whole.unwritten == 0 && whole.nans == 0;
  const Tensor g = take_rows(got, tokens), r = take_rows(ref, tokens);
  // Rounding to the dtype after each matmul compounds over two products and a weighted sum.
  // fp8: the reference chain requantizes x and h as the kernels do, so only codes one step
  // apart (fp32 vs fp64 sums landing on either side of a rounding boundary) and the bf16
  // roundings separate them: a looser bound, 5% relative L2 and 25% per element.
  const DType act = layer_act_dtype(L);
  Check sample = is_fp8(L) ? compare_close("out (" + std::to_string(tokens.size()) +
                                               " tokens vs the fp64 stage references, fp8 bound)",
                                           g, r, 5e-2, 0.25, 5e-2)
                           : compare_close("out (" + std::to_string(tokens.size()) + " tokens vs the fp64 stage references)",
                                           g, r, kLayerRelL2Factor * rel_l2_tolerance(act), kLayerRtol, kLayerAtol);
  return make_validation({whole, sample});
}

}  // namespace moe
