#include "router/spec.hpp"

#include <cmath>

#include "moe/error.hpp"

namespace moe {

std::string RouterSpec::str() const {
  std::string r = "T=" + std::to_string(tokens) + " E=" + std::to_string(experts) + " k=" + std::to_string(topk);
  if (shared) r += " S=" + std::to_string(shared);
  if (groups > 1) r += " G=" + std::to_string(groups) + " TG=" + std::to_string(topk_group);
  return r + " " + std::string(dtype_name(dtype));
}

RouterSpec RouterSpec::from(const Params& p) {
  RouterSpec s;
  s.tokens = p.i("tokens");
  s.experts = p.i("experts");
  s.topk = p.i("topk");
  s.shared = p.i("shared");
  s.groups = p.i("groups");
  s.topk_group = p.i("topk_group");
  s.dtype = parse_dtype(p.s("dtype"));
  s.scoring = p.s("scoring") == "sigmoid" ? RouterScoring::sigmoid : RouterScoring::softmax;
  s.group_score = p.s("group_score") == "max" ? GroupScore::max : GroupScore::top2_sum;
  s.renormalize = p.b("renormalize");
  s.bias = p.b("bias");
  s.rsf = p.f("rsf");

  const std::string E = std::to_string(s.experts), G = std::to_string(s.groups);
  if (s.tokens < 1) throw Error("router: tokens must be at least 1, got " + std::to_string(s.tokens));
  if (s.experts < 1) throw Error("router: experts must be at least 1, got " + E);
  if (s.dtype != DType::f32 && s.dtype != DType::bf16 && s.dtype != DType::f16)
    throw Error("router: logits dtype must be f32, bf16 or f16");
  if (s.groups < 1 || s.experts % s.groups != 0)
    throw Error("router: groups (" + G + ") must divide experts (" + E + "); use groups=1 for ungrouped routing");
  if (s.topk_group < 1 || s.topk_group > s.groups)
    throw Error("router: topk_group (" + std::to_string(s.topk_group) + ") must be between 1 and groups (" + G + ")");
  const std::int64_t selectable = s.topk_group * s.group_size();
  if (s.topk < 1 || s.topk > selectable)
    throw Error("router: topk (" + std::to_string(s.topk) + ") must be between 1 and the " +
                std::to_string(selectable) + " experts of the " + std::to_string(s.topk_group) +
                " kept groups (topk_group * experts / groups); raise topk_group or lower topk");
  if (s.shared < 0) throw Error("router: shared must not be negative");
  if (s.experts + s.shared > (std::int64_t{1} << 30))
    throw Error("router: experts + shared (" + std::to_string(s.experts + s.shared) + ") do not fit an int32 id");
  if (!std::isfinite(s.rsf)) throw Error("router: rsf (routed_scaling_factor) must be a finite number");
  return s;
}

}  // namespace moe
