#include "router/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "common/validate.hpp"
#include "moe/error.hpp"
#include "router/reference.hpp"

namespace moe::router {

namespace {

// Everything validation needs to know about one row's scores.
struct RowView {
  const RouterSpec& spec;
  const float* s;
  const float* c;
  const float* bias;  // may be null

  // Magnitude of the terms that make up c: the scale of its rounding error.
  double mag(std::int64_t e) const {
    const double se = std::isnan(s[e]) ? 0.0 : std::fabs(s[e]);
    return se + (bias ? std::fabs(bias[e]) : 0.0);
  }
  bool near_experts(std::int64_t a, std::int64_t b) const {
    const double ra = rank_value(c[a]), rb = rank_value(c[b]);
    return ra == rb || std::fabs(ra - rb) <= kNearTie * std::max(mag(a), mag(b)) + kNearTieFloor;
  }
};

std::string row_str(const std::int32_t* v, std::int64_t n) {
  std::string r = "[";
  for (std::int64_t j = 0; j < n; ++j) r += (j ? "," : "") + std::to_string(v[j]);
  return r + "]";
}

// Group choices a correct kernel may make: the reference's, plus every exchange among the
// groups near-tied with the topk_group-th best group.
std::vector<std::vector<char>> group_alternatives(const RowView& v) {
  const RouterSpec& sp = v.spec;
  if (!sp.grouped()) return {std::vector<char>(sp.groups, 1)};
  const auto gs = group_scores(sp, v.c);
  const std::int64_t G = sp.groups, n = sp.group_size();
  // Rounding scale of each group score: the terms of its best one or two experts.
  std::vector<double> gmag(G);
  for (std::int64_t g = 0; g < G; ++g) {
    std::vector<std::int64_t> e(n);
    std::iota(e.begin(), e.end(), g * n);
    std::sort(e.begin(), e.end(), [&](auto a, auto b) { return ranks_before(v.c, a, b); });
    const bool two = sp.group_score == GroupScore::top2_sum && n >= 2;
    gmag[g] = v.mag(e[0]) + (two ? v.mag(e[1]) : 0.0);
  }
  auto near = [&](std::int64_t a, std::int64_t b) {
    return gs[a] == gs[b] ||
           std::fabs(double(gs[a]) - double(gs[b])) <= 2 * kNearTie * std::max(gmag[a], gmag[b]) + kNearTieFloor;
  };
  std::vector<std::int64_t> order(G);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return ranks_before(gs.data(), a, b); });
  const std::int64_t edge = order[sp.topk_group - 1];
  std::vector<char> base(G, 0);
  std::vector<std::int64_t> amb;
  std::int64_t sure = 0;
  for (std::int64_t i = 0; i < G; ++i) {
    const std::int64_t g = order[i];
    if (near(g, edge)) amb.push_back(g);
    else if (i < sp.topk_group) base[g] = 1, ++sure;
  }
  const std::int64_t need = sp.topk_group - sure;
  // Bound the enumeration; beyond it (degenerate rows) only the reference's choice counts.
  double combos = 1;
  for (std::int64_t i = 0; i < need; ++i) combos = combos * double(amb.size() - i) / double(i + 1);
  if (combos > 256) return {keep_groups(sp, gs)};
  std::vector<std::vector<char>> out;
  std::vector<char> cur = base;
  std::function<void(std::size_t, std::int64_t)> pick = [&](std::size_t from, std::int64_t left) {
    if (left == 0) return out.push_back(cur);
    for (std::size_t i = from; i + left <= amb.size(); ++i) {
      cur[amb[i]] = 1;
      pick(i + 1, left - 1);
      cur[amb[i]] = 0;
    }
  };
  pick(0, need);
  return out;
}

// Whether `got` (routed slots) is a correct selection up to near-ties; `why` says otherwise.
bool near_tie_match(const RowView& v, const std::int32_t* got, std::string& why) {
  const RouterSpec& sp = v.spec;
  std::vector<std::int32_t> want(sp.topk);
  for (const auto& kept : group_alternatives(v)) {
    select_experts(sp, v.c, kept, want.data());
    bool ok = true;
    for (std::int64_t j = 0; ok && j < sp.topk; ++j)
      ok = kept[got[j] / sp.group_size()] && (got[j] == want[j] || v.near_experts(got[j], want[j]));
    if (ok) return true;
  }
  select_experts(sp, v.c, keep_groups(sp, group_scores(sp, v.c)), want.data());
  why = "got ids " + row_str(got, sp.topk) + ", reference " + row_str(want.data(), sp.topk);
  return false;
}

}  // namespace

Validation validate(const RouterSpec& sp, const TensorMap& in, const TensorMap& got, const TensorMap& ref) {
  auto need_t = [](const TensorMap& m, const char* name, const char* what) -> const Tensor& {
    auto it = m.find(name);
    if (it == m.end()) throw Error(std::string("router validate: ") + what + " lack '" + name + "'");
    return it->second;
  };
  const Tensor& logits = need_t(in, "logits", "inputs");
  const Tensor& gi = need_t(got, "ids", "outputs");
  const Tensor& gw = need_t(got, "weights", "outputs");
  const Tensor& ri = need_t(ref, "ids", "reference outputs");
  const Tensor& rw = need_t(ref, "weights", "reference outputs");
  const std::int64_t T = sp.tokens, E = sp.experts, K = sp.slots(), k = sp.topk;
  const Shape want{T, K};
  if (gi.dtype() != DType::i32 || gi.shape() != want || ri.shape() != want || gw.shape() != want)
    throw Error("router validate: ids/weights must be " + shape_str(want) + ", got ids " + shape_str(gi.shape()) +
                " weights " + shape_str(gw.shape()));
  const float* bias = nullptr;
  if (sp.bias) bias = need_t(in, "bias", "inputs").data<float>();

  Tensor expected = rw;  // weights the returned ids deserve
  Check ic;
  ic.tensor = "ids";
  std::int64_t near_rows = 0;
  std::vector<float> x(E), s(E), c(E);
  std::vector<char> seen(E);
  const auto* g_all = gi.data<std::int32_t>();
  const auto* r_all = ri.data<std::int32_t>();
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int32_t* g = g_all + t * K;
    const std::int32_t* r = r_all + t * K;
    std::int64_t poisoned = 0;
    for (std::int64_t j = 0; j < K; ++j) poisoned += is_poison(DType::i32, g + j);
    if (poisoned) {
      if (ic.detail.empty()) ic.detail = "row " + std::to_string(t) + ": " + std::to_string(poisoned) + " ids never written";
      ic.unwritten += poisoned;
      continue;
    }
    if (std::memcmp(g, r, sizeof(std::int32_t) * K) == 0) continue;
    std::string why;
    bool ok = true;
    for (std::int64_t i = 0; ok && i < sp.shared; ++i)
      if (g[k + i] != E + i) ok = false, why = "shared slot " + std::to_string(k + i) + " holds " + std::to_string(g[k + i]);
    std::fill(seen.begin(), seen.end(), 0);
    for (std::int64_t j = 0; ok && j < k; ++j) {
      if (g[j] < 0 || g[j] >= E) ok = false, why = "id " + std::to_string(g[j]) + " out of range";
      else if (seen[g[j]]++) ok = false, why = "expert " + std::to_string(g[j]) + " chosen twice";
    }
    if (ok) {
      load_row(logits, t, x.data());
      row_scores(sp, x.data(), bias, s.data(), c.data());
      ok = near_tie_match(RowView{sp, s.data(), c.data(), bias}, g, why);
      if (ok) {
        ++near_rows;
        routed_weights(sp, s.data(), g, expected.data<float>() + t * K);
      }
    }
    if (!ok) {
      ++ic.mismatches;
      if (ic.detail.empty()) ic.detail = "row " + std::to_string(t) + ": " + why;
    }
  }
  ic.ok = ic.mismatches == 0 && ic.unwritten == 0;
  if (ic.ok && near_rows) ic.detail = std::to_string(near_rows) + " rows differ only by near-ties (accepted)";

  const double atol = kWeightAtol * std::max(1.0, std::fabs(sp.rsf));
  Check wc = compare_close("weights", gw, expected, kWeightRtol, kWeightRtol, atol);
  return make_validation({ic, wc});
}

}  // namespace moe::router
