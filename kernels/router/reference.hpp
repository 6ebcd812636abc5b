#pragma once
// The router's definition (DESIGN 1.1), in plain loops. Every backend is judged against it,
// and validation reuses its pieces to recognise near-ties.
//
// Choices the design leaves open, fixed here:
// - softmax (DESIGN 1.1 rule 1): a NaN logit counts as -inf (s = 0), so one bad logit does not
//   wipe out the row; +inf logits share the whole mass equally (the limit), the rest get 0. A
//   row without a logit above -inf (all NaN or -inf; NaN counting as -inf) scores NaN
//   everywhere, like the all-NaN row the design names and like max-subtracted -inf - -inf.
// - group score: top2_sum adds the two largest selection scores in fp32 (what deployed
//   routers compute; fp64 would only create near-ties no kernel reproduces); a group of one
//   expert scores that expert's c. A NaN group score ranks as -inf.
// - an all-NaN row still fills every slot: NaN ranks as -inf, ties go to the lower id, so
//   it picks experts 0..k-1 (of the kept groups) with weight 0.
#include <cstdint>
#include <vector>

#include "moe/tensor.hpp"
#include "router/spec.hpp"

namespace moe::router {

// NaN ranks as -inf.
float rank_value(float c);
// Expert (or group) a ranks before b: larger rank value, ties to the lower index.
bool ranks_before(const float* c, std::int64_t a, std::int64_t b);

// Softmax of one row of E logits (fp64 row sum), with the non-finite rules above.
void softmax_row(const float* x, std::int64_t E, float* s);
// Logits of row t widened to float (bf16/f16 convert exactly).
void load_row(const Tensor& logits, std::int64_t t, float* x);
// s = score(x) in fp32 (softmax with an fp64 row sum, or sigmoid); c = s + bias in fp32.
void row_scores(const RouterSpec& spec, const float* x, const float* bias, float* s, float* c);
// Score of each group from the selection scores c (NaN -> -inf).
std::vector<float> group_scores(const RouterSpec& spec, const float* c);
// The topk_group best groups (ties to the lower group index); all true when ungrouped.
std::vector<char> keep_groups(const RouterSpec& spec, const std::vector<float>& gscore);
// The k best experts among the kept groups, best first.
void select_experts(const RouterSpec& spec, const float* c, const std::vector<char>& kept, std::int32_t* ids);
// Weights of the routed slots for the chosen ids: s (NaN -> 0), renormalised in fp64, times rsf.
void routed_weights(const RouterSpec& spec, const float* s, const std::int32_t* ids, float* w);

// Whole problem: weights [T,K] f32 and ids [T,K] i32; bias may be null when spec.bias is off.
void router_reference(const RouterSpec& spec, const Tensor& logits, const Tensor* bias, Tensor& weights,
                      Tensor& ids);

}  // namespace moe::router
