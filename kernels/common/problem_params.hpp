#pragma once
// The shared vocabulary of problem parameters. Model presets use the same names, so a
// preset fills any family's problem without per-family code.
#include "moe/params.hpp"

namespace moe::pp {

ParamSpec tokens();                           // T
ParamSpec dtype(const char* def, std::vector<std::string> allowed);  // activation / logits dtype
ParamSpec scale_fmt();                        // fp8: activation scales fp32 | ue8m0
ParamSpec w4_group();                         // int4: K elements per scale, 32 | 128 (docs/w4.md)
ParamSpec zero_point();                       // int4: zero points per group 0 | 1
ParamSpec experts();                          // E routed experts
ParamSpec topk();                             // k routed per token
ParamSpec shared();                           // S fused shared experts (ids E..E+S-1)
ParamSpec groups();                           // G
ParamSpec topk_group();                       // TG
ParamSpec group_score();                      // top2_sum | max
ParamSpec scoring();                          // softmax | sigmoid
ParamSpec renormalize();
ParamSpec rsf();                              // routed_scaling_factor
ParamSpec bias();                             // has e_score_correction_bias
ParamSpec hidden();                           // D
ParamSpec intermediate();                     // I (per TP shard)
ParamSpec align();                            // A, dispatch block alignment
ParamSpec expert_begin();                     // local expert range [begin, end) for EP
ParamSpec expert_end();                       // -1: all (experts + shared)
// The expert function (gmm and the layer): activation (silu | swiglu_oai) with alpha and
// limit, w13_layout (split | interleaved) with w13_block, and the expert biases bias13 and
// bias2. Their defaults are the SwiGLU every kernel computes.
std::vector<ParamSpec> expert_fn();

}  // namespace moe::pp
