#include "common/problem_params.hpp"

namespace moe::pp {

static ParamSpec int_spec(const char* name, std::int64_t def, std::int64_t lo, std::int64_t hi, const char* help) {
  ParamSpec s;
  s.name = name;
  s.kind = ParamKind::Int;
  s.default_value = def;
  s.min = lo;
  s.max = hi;
  s.help = help;
  return s;
}

static ParamSpec choice_spec(const char* name, const char* def, std::vector<std::string> c, const char* help) {
  ParamSpec s;
  s.name = name;
  s.kind = ParamKind::Choice;
  s.default_value = std::string(def);
  s.choices = std::move(c);
  s.help = help;
  return s;
}

ParamSpec tokens() { return int_spec("tokens", 64, 1, 1 << 24, "T: tokens in the batch"); }
ParamSpec dtype(const char* def, std::vector<std::string> allowed) {
  return choice_spec("dtype", def, std::move(allowed), "element type of the activations (router: of the logits)");
}
ParamSpec experts() { return int_spec("experts", 64, 1, 4096, "E: routed experts"); }
ParamSpec topk() { return int_spec("topk", 8, 1, 64, "k: routed experts per token"); }
ParamSpec shared() { return int_spec("shared", 0, 0, 16, "S: fused shared experts (slot ids E..E+S-1, weight 1)"); }
ParamSpec groups() { return int_spec("groups", 1, 1, 4096, "G: expert groups (1: ungrouped)"); }
ParamSpec topk_group() { return int_spec("topk_group", 1, 1, 4096, "TG: groups kept per token"); }
ParamSpec group_score() {
  return choice_spec("group_score", "top2_sum", {"top2_sum", "max"}, "score of a group: sum of its two best or its best");
}
ParamSpec scoring() { return choice_spec("scoring", "softmax", {"softmax", "sigmoid"}, "logit scoring function"); }
ParamSpec renormalize() {
  ParamSpec s = int_spec("renormalize", 1, 0, 1, "divide the k weights by their sum");
  s.kind = ParamKind::Bool;
  return s;
}
ParamSpec rsf() {
  ParamSpec s;
  s.name = "rsf";
  s.kind = ParamKind::Float;
  s.default_value = 1.0;
  s.help = "routed_scaling_factor applied to the routed weights";
  return s;
}
ParamSpec bias() {
  ParamSpec s = int_spec("bias", 0, 0, 1, "add e_score_correction_bias [E] for selection only");
  s.kind = ParamKind::Bool;
  return s;
}
ParamSpec hidden() { return int_spec("hidden", 2048, 1, 1 << 17, "D: hidden size"); }
ParamSpec intermediate() { return int_spec("intermediate", 768, 1, 1 << 17, "I: expert intermediate size per TP shard"); }
ParamSpec align() { return int_spec("align", 16, 1, 1024, "A: each expert's rows padded to a multiple of A"); }
ParamSpec expert_begin() { return int_spec("expert_begin", 0, 0, 1 << 20, "first local expert (expert parallelism)"); }
ParamSpec expert_end() { return int_spec("expert_end", -1, -1, 1 << 20, "one past the last local expert; -1: all"); }

}  // namespace moe::pp
