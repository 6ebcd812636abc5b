#include "common/problem_params.hpp"

#include <algorithm>

namespace moe::pp {

ParamSpec tokens() { return int_param("tokens", 64, 1, 1 << 24, "T: tokens in the batch"); }
ParamSpec dtype(const char* def, std::vector<std::string> allowed) {
  const bool fp8 = std::find(allowed.begin(), allowed.end(), "fp8") != allowed.end();
  const bool int4 = std::find(allowed.begin(), allowed.end(), "int4") != allowed.end();
  ParamSpec s = choice_param("dtype", def, std::move(allowed),
                             "element type of the activations (router: of the logits; fp8: e4m3 block-scaled W8A8, "
                             "docs/fp8.md)");
  if (fp8) s.aliases = {{"fp8_w8a8", "fp8"}};  // vLLM's spelling
  if (int4) s.aliases.push_back({"w4a16", "int4"});
  if (int4) s.help += "; mxfp4 and int4 (w4a16): 4-bit weights, bf16 activations, docs/w4.md";
  return s;
}
ParamSpec scale_fmt() {
  return choice_param("scale_fmt", "fp32", {"fp32", "ue8m0"},
                      "fp8 only: activation scales as amax/448 in fp32, or rounded up to powers of two (ue8m0)");
}
ParamSpec w4_group() {
  return int_param("group", 128, 32, 128, "int4 only: K elements per weight scale (32 or 128; mxfp4's is always 32)");
}
ParamSpec zero_point() {
  ParamSpec s = int_param("zero_point", 0, 0, 1, "int4 only: a 4-bit zero point per group (AWQ, asymmetric); 0: symmetric");
  s.kind = ParamKind::Bool;
  return s;
}
ParamSpec experts() { return int_param("experts", 64, 1, 4096, "E: routed experts"); }
ParamSpec topk() { return int_param("topk", 8, 1, 64, "k: routed experts per token"); }
ParamSpec shared() { return int_param("shared", 0, 0, 16, "S: fused shared experts (slot ids E..E+S-1, weight 1)"); }
ParamSpec groups() { return int_param("groups", 1, 1, 4096, "G: expert groups (1: ungrouped)"); }
ParamSpec topk_group() { return int_param("topk_group", 1, 1, 4096, "TG: groups kept per token"); }
ParamSpec group_score() {
  return choice_param("group_score", "top2_sum", {"top2_sum", "max"}, "score of a group: sum of its two best or its best");
}
ParamSpec scoring() { return choice_param("scoring", "softmax", {"softmax", "sigmoid"}, "logit scoring function"); }
ParamSpec renormalize() {
  ParamSpec s = int_param("renormalize", 1, 0, 1, "divide the k weights by their sum");
  s.kind = ParamKind::Bool;
  return s;
}
ParamSpec rsf() {
  ParamSpec s;
  s.name = "rsf";
  s.kind = ParamKind::Float;
  s.default_value = 1.0;
  s.above = 0;  // as every model's routed_scaling_factor; a sign flip or zero is a typo
  s.help = "routed_scaling_factor applied to the routed weights";
  return s;
}
ParamSpec bias() {
  ParamSpec s = int_param("bias", 0, 0, 1, "add e_score_correction_bias [E] for selection only");
  s.kind = ParamKind::Bool;
  return s;
}
ParamSpec hidden() { return int_param("hidden", 2048, 1, 1 << 17, "D: hidden size"); }
ParamSpec intermediate() { return int_param("intermediate", 768, 1, 1 << 17, "I: expert intermediate size per TP shard"); }
ParamSpec align() { return int_param("align", 16, 1, 1024, "A: each expert's rows padded to a multiple of A"); }
ParamSpec expert_begin() { return int_param("expert_begin", 0, 0, 1 << 20, "first local expert (expert parallelism)"); }
ParamSpec expert_end() { return int_param("expert_end", -1, -1, 1 << 20, "one past the last local expert; -1: all"); }

std::vector<ParamSpec> expert_fn() {
  const auto positive = [](const char* name, double def, const char* help) {
    ParamSpec s;
    s.name = name;
    s.kind = ParamKind::Float;
    s.default_value = def;
    s.above = 0;
    s.help = help;
    return s;
  };
  const auto flag = [](const char* name, const char* help) {
    ParamSpec s = int_param(name, 0, 0, 1, help);
    s.kind = ParamKind::Bool;
    return s;
  };
  return {choice_param("activation", "silu", {"silu", "swiglu_oai"},
                       "up's activation: silu(gate) * up, or gpt-oss's clamped SwiGLU (gate = min(gate, limit), "
                       "up = clamp(up, -limit, limit), (up + 1) * gate * sigmoid(alpha * gate))"),
          positive("alpha", 1.702, "swiglu_oai only: the sigmoid's slope"),
          positive("limit", 7.0, "swiglu_oai only: the clamp of gate (above) and up (both sides)"),
          choice_param("w13_layout", "split", {"split", "interleaved"},
                       "w13's rows: split (gate rows 0..I-1, then up rows) or interleaved (gate and up rows "
                       "alternate in blocks of w13_block)"),
          int_param("w13_block", 1, 1, 1 << 17, "interleaved only: rows per gate or up block (gpt-oss: 1); divides I"),
          flag("bias13", "up adds an expert bias bias13 [E, 2I] (in w13's row order) to gate|up before the activation"),
          flag("bias2", "down adds an expert bias bias2 [E, D] to its output, before any routed weight")};
}

}  // namespace moe::pp
