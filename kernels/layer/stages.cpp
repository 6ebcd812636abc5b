#include "layer/stages.hpp"

#include "common/max_rows.hpp"
#include "common/w4_problem.hpp"

#include <algorithm>

namespace moe {

static Params stage_problem(const std::string& fam, const Params& layer, std::initializer_list<std::pair<const char*, Value>> extra) {
  const FamilyDesc& f = family(fam);
  Params p;
  for (auto& [k, v] : layer.values())
    if (f.problem_param(k)) p.set(k, v);
  // fp8 is dispatch's and gmm's business (DESIGN.md 1.6): the router reads bf16 logits and
  // combine sums the bf16 rows gmm down writes. The 4-bit weights (docs/w4.md) are gmm's alone.
  const ParamSpec* dt = f.problem_param("dtype");
  const bool recipe = layer.has("dtype") && (layer.s("dtype") == "fp8" || layer.s("dtype") == "mxfp4" || layer.s("dtype") == "int4");
  if (recipe && dt &&
      std::find(dt->choices.begin(), dt->choices.end(), layer.s("dtype")) == dt->choices.end())
    p.set("dtype", std::string("bf16"));
  for (auto& [k, v] : extra) p.set(k, v);
  return complete(f.problem_params, p, "layer stage " + fam);
}

std::vector<Stage> layer_stages(const Params& L) {
  return {
      {"router", "router", stage_problem("router", L, {})},  // logits in the layer's dtype, as presets give the router
      {"dispatch", "dispatch", stage_problem("dispatch", L, {})},
      {"gmm_up", "gmm", stage_problem("gmm", L, {{"stage", std::string("up")}})},
      {"gmm_down", "gmm", stage_problem("gmm", L, {{"stage", std::string("down")}, {"routed_weight", std::int64_t{0}}})},
      {"combine", "combine",
       stage_problem("combine", L, {{"layout", std::string("ragged")}, {"out_dtype", std::string("same")},
                                    {"epilogue", std::string("none")}})},
  };
}

ExpertRange layer_experts(const Params& L) {
  const std::int64_t all = L.i("experts") + L.i("shared");
  const std::int64_t end = L.has("expert_end") && L.i("expert_end") >= 0 ? L.i("expert_end") : all;
  return {L.has("expert_begin") ? L.i("expert_begin") : 0, end};
}

std::int64_t layer_max_rows(const Params& L) {
  return max_dispatch_rows(L.i("tokens"), L.i("topk") + L.i("shared"), layer_experts(L).count(), L.i("align"));
}

DType layer_act_dtype(const Params& L) {
  const std::string t = L.s("dtype");
  return t == "fp8" || is_w4_dtype(t) ? DType::bf16 : parse_dtype(t);
}

}  // namespace moe
