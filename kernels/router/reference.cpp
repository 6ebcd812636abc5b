#include "router/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace moe::router {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float rank_value(float c) { return std::isnan(c) ? kNegInf : c; }

bool ranks_before(const float* c, std::int64_t a, std::int64_t b) {
  const float ra = rank_value(c[a]), rb = rank_value(c[b]);
  return ra > rb || (ra == rb && a < b);
}

void load_row(const Tensor& logits, std::int64_t t, float* x) {
  const std::int64_t E = logits.shape()[1];
  for (std::int64_t e = 0; e < E; ++e) x[e] = static_cast<float>(logits.get(t * E + e));
}

void softmax_row(const float* x, std::int64_t E, float* s) {
  float m = kNegInf;
  for (std::int64_t e = 0; e < E; ++e)
    if (!std::isnan(x[e])) m = std::max(m, x[e]);
  if (m == kNegInf) {  // every logit NaN or -inf: nothing to take the max against
    std::fill(s, s + E, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  // exp(x - m) would be inf - inf for the +inf logits themselves; in the limit each of them
  // weighs exp(0) and every finite logit nothing.
  const bool inf = m == -kNegInf;
  double sum = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    s[e] = std::isnan(x[e]) ? 0.0f : inf ? (x[e] == m ? 1.0f : 0.0f) : std::exp(x[e] - m);
    sum += s[e];
  }
  for (std::int64_t e = 0; e < E; ++e) s[e] = static_cast<float>(static_cast<double>(s[e]) / sum);
}

void row_scores(const RouterSpec& spec, const float* x, const float* bias, float* s, float* c) {
  const std::int64_t E = spec.experts;
  if (spec.scoring == RouterScoring::sigmoid) {
    for (std::int64_t e = 0; e < E; ++e) s[e] = 1.0f / (1.0f + std::exp(-x[e]));
  } else {
    softmax_row(x, E, s);
  }
  for (std::int64_t e = 0; e < E; ++e) c[e] = s[e] + (bias ? bias[e] : 0.0f);
}

std::vector<float> group_scores(const RouterSpec& spec, const float* c) {
  const std::int64_t G = spec.groups, n = spec.group_size();
  std::vector<float> score(G);
  for (std::int64_t g = 0; g < G; ++g) {
    std::vector<float> r(n);
    for (std::int64_t i = 0; i < n; ++i) r[i] = rank_value(c[g * n + i]);
    std::sort(r.begin(), r.end(), std::greater<float>());
    const bool two = spec.group_score == GroupScore::top2_sum && n >= 2;
    score[g] = rank_value(two ? r[0] + r[1] : r[0]);
  }
  return score;
}

std::vector<char> keep_groups(const RouterSpec& spec, const std::vector<float>& gscore) {
  const std::int64_t G = spec.groups;
  if (!spec.grouped()) return std::vector<char>(G, 1);
  std::vector<std::int64_t> order(G);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return ranks_before(gscore.data(), a, b); });
  std::vector<char> kept(G, 0);
  for (std::int64_t i = 0; i < spec.topk_group; ++i) kept[order[i]] = 1;
  return kept;
}

void select_experts(const RouterSpec& spec, const float* c, const std::vector<char>& kept, std::int32_t* ids) {
  std::vector<std::int64_t> cand;
  for (std::int64_t e = 0; e < spec.experts; ++e)
    if (kept[e / spec.group_size()]) cand.push_back(e);
  std::sort(cand.begin(), cand.end(), [&](auto a, auto b) { return ranks_before(c, a, b); });
  for (std::int64_t j = 0; j < spec.topk; ++j) ids[j] = static_cast<std::int32_t>(cand[j]);
}

void routed_weights(const RouterSpec& spec, const float* s, const std::int32_t* ids, float* w) {
  std::vector<double> v(spec.topk);
  double sum = 0;
  for (std::int64_t j = 0; j < spec.topk; ++j) {
    const float x = s[ids[j]];
    v[j] = std::isnan(x) ? 0.0 : x;
    sum += v[j];
  }
  for (std::int64_t j = 0; j < spec.topk; ++j) {
    if (spec.renormalize && sum > 0) v[j] /= sum;
    w[j] = static_cast<float>(v[j] * spec.rsf);
  }
}

void router_reference(const RouterSpec& spec, const Tensor& logits, const Tensor* bias, Tensor& weights,
                      Tensor& ids) {
  const std::int64_t E = spec.experts, K = spec.slots();
  std::vector<float> x(E), s(E), c(E);
  const float* b = spec.bias && bias ? bias->data<float>() : nullptr;
  for (std::int64_t t = 0; t < spec.tokens; ++t) {
    load_row(logits, t, x.data());
    row_scores(spec, x.data(), b, s.data(), c.data());
    const auto kept = spec.grouped() ? keep_groups(spec, group_scores(spec, c.data())) : std::vector<char>(spec.groups, 1);
    std::int32_t* id = ids.data<std::int32_t>() + t * K;
    float* w = weights.data<float>() + t * K;
    select_experts(spec, c.data(), kept, id);
    routed_weights(spec, s.data(), id, w);
    for (std::int64_t i = 0; i < spec.shared; ++i) {
      id[spec.topk + i] = static_cast<std::int32_t>(E + i);
      w[spec.topk + i] = 1.0f;
    }
  }
}

}  // namespace moe::router
