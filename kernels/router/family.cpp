#include "router/family.hpp"

#include "common/problem_params.hpp"
#include "common/routing_gen.hpp"
#include "router/cpu.hpp"
#include "router/cuda.hpp"
#include "router/emu.hpp"
#include "router/reference.hpp"
#include "router/spec.hpp"
#include "router/validate.hpp"

namespace moe {

namespace {

std::vector<TensorSpec> input_specs(const Params& problem) {
  const RouterSpec sp = RouterSpec::from(problem);
  std::vector<TensorSpec> v{{"logits", sp.dtype, {sp.tokens, sp.experts}, "router logits [T,E]"}};
  if (sp.bias) v.push_back({"bias", DType::f32, {sp.experts}, "e_score_correction_bias [E], steers selection only"});
  return v;
}

void make_inputs(const Params& problem, const InputOptions& opt, TensorMap& in) {
  const RouterSpec sp = RouterSpec::from(problem);
  if (!in.count("logits")) {
    Rng rng(opt.seed);
    in.emplace("logits", routing_logits(sp.tokens, sp.experts, sp.dtype, opt, rng));
  }
  if (sp.bias && !in.count("bias")) {
    // Its own stream, so given logits leave the bias unchanged. Spread comparable to the
    // sigmoid scores it corrects: selection depends on both, as in the deployed models.
    Rng rng(opt.seed ^ 0xB1A5C0DEull);
    in.emplace("bias", random_tensor(DType::f32, {sp.experts}, rng, 0.1));
  }
}

std::vector<TensorSpec> output_specs(const Params& problem, const TensorMap&) {
  const RouterSpec sp = RouterSpec::from(problem);
  return {{"weights", DType::f32, {sp.tokens, sp.slots()}, "routing weights [T,K]: k routed, then S shared (1.0)"},
          {"ids", DType::i32, {sp.tokens, sp.slots()}, "expert ids [T,K]: best first, then shared ids E..E+S-1"}};
}

void reference(const Params& problem, const TensorMap& in, TensorMap& out) {
  const RouterSpec sp = RouterSpec::from(problem);
  const Tensor* bias = sp.bias ? &in.at("bias") : nullptr;
  router::router_reference(sp, in.at("logits"), bias, out.at("weights"), out.at("ids"));
}

Cost cost(const Params& problem, const TensorMap&) {
  const RouterSpec sp = RouterSpec::from(problem);
  const double T = static_cast<double>(sp.tokens), E = static_cast<double>(sp.experts);
  Cost c;
  c.bytes = T * E * static_cast<double>(dtype_size(sp.dtype)) + (sp.bias ? 4 * E : 0) +
            T * static_cast<double>(sp.slots()) * (4 + 4);
  // Per logit: the score (exp, add, and a divide or multiply) and the bias add.
  c.flops = T * E * 4;
  return c;
}

}  // namespace

const FamilyDesc& router_family() {
  static const FamilyDesc d = [] {
    FamilyDesc f;
    f.name = "router";
    f.summary = "fused gate: logits [T,E] -> top-k weights [T,K] and ids [T,K] (softmax|sigmoid, bias, groups, shared)";
    f.problem_params = {pp::tokens(),      pp::dtype("f32", {"f32", "bf16", "f16"}),
                        pp::experts(),     pp::topk(),
                        pp::shared(),      pp::groups(),
                        pp::topk_group(),  pp::group_score(),
                        pp::scoring(),     pp::renormalize(),
                        pp::rsf(),         pp::bias()};
    f.check_problem = [](const Params& p) { RouterSpec::from(p); };
    f.footprint = [](const Params& p) {
      const RouterSpec s = RouterSpec::from(p);
      const double T = static_cast<double>(s.tokens), E = static_cast<double>(s.experts);
      return Footprint{{{"logits", T * E * static_cast<double>(dtype_size(s.dtype))}, {"bias", 4 * E}},
                       T * static_cast<double>(s.slots()) * 8};
    };
    f.input_specs = input_specs;
    f.make_inputs = make_inputs;
    f.output_specs = output_specs;
    f.reference = reference;
    f.validate = [](const Params& p, const TensorMap& in, const TensorMap& got, const TensorMap& ref) {
      return router::validate(RouterSpec::from(p), in, got, ref);
    };
    f.cost = cost;
    f.estimate = [](const Params& p) { return cost(p, TensorMap{}); };
    f.backends = {router::cpu_backend(), router::cuda_backend(), router::emu_backend()};
    return f;
  }();
  return d;
}

}  // namespace moe
