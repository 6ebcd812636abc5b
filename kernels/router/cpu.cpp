#include "router/cpu.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/parallel.hpp"
#include "moe/error.hpp"
#include "router/reference.hpp"
#include "router/spec.hpp"

namespace moe::router {

namespace {

const std::vector<std::int64_t> kRowsPerTask = {1, 4, 16, 64};
const std::vector<std::string> kSelect = {"heap", "partial_sort", "iterative"};
enum class Select { heap, partial_sort, iterative };

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Selection order: larger score first, NaN as -inf, ties to the lower index. A strict total
// order on distinct indices, so every algorithm below returns the same list.
struct Better {
  const float* rank;
  bool operator()(std::int32_t a, std::int32_t b) const {
    return rank[a] > rank[b] || (rank[a] == rank[b] && a < b);
  }
};

// Writes the `n` best of `cand` (n <= cand.size()) into out, best first.
void top_n(Select algo, std::vector<std::int32_t>& cand, std::size_t n, Better better, std::int32_t* out) {
  switch (algo) {
    case Select::partial_sort:
      std::partial_sort(cand.begin(), cand.begin() + n, cand.end(), better);
      std::copy_n(cand.begin(), n, out);
      return;
    case Select::heap: {
      // The heap's front is its worst member, so each candidate is one comparison away
      // from being rejected.
      std::vector<std::int32_t> heap(cand.begin(), cand.begin() + n);
      std::make_heap(heap.begin(), heap.end(), better);
      for (std::size_t i = n; i < cand.size(); ++i) {
        if (!better(cand[i], heap.front())) continue;
        std::pop_heap(heap.begin(), heap.end(), better);
        heap.back() = cand[i];
        std::push_heap(heap.begin(), heap.end(), better);
      }
      std::sort_heap(heap.begin(), heap.end(), better);
      std::copy_n(heap.begin(), n, out);
      return;
    }
    case Select::iterative:
      for (std::size_t j = 0; j < n; ++j) {
        std::size_t best = j;
        for (std::size_t i = j + 1; i < cand.size(); ++i)
          if (better(cand[i], cand[best])) best = i;
        std::swap(cand[j], cand[best]);
        out[j] = cand[j];
      }
      return;
  }
}

// Per-worker scratch, sized once per task.
struct Scratch {
  std::vector<float> x, s, rank, grank, gscore;
  std::vector<std::int32_t> cand, gcand, gkept;
  explicit Scratch(const RouterSpec& sp)
      : x(sp.experts), s(sp.experts), rank(sp.experts), grank(sp.group_size()), gscore(sp.groups) {
    cand.reserve(sp.experts);
    gcand.reserve(sp.groups);
    gkept.resize(sp.topk_group);
  }
};

void route_row(const RouterSpec& sp, Select algo, const void* logits, const float* bias, std::int64_t t,
               Scratch& w, float* weights, std::int32_t* ids) {
  const std::int64_t E = sp.experts, K = sp.slots(), k = sp.topk;
  switch (sp.dtype) {
    case DType::bf16:
      for (std::int64_t e = 0; e < E; ++e) w.x[e] = bf16_to_float(static_cast<const std::uint16_t*>(logits)[t * E + e]);
      break;
    case DType::f16:
      for (std::int64_t e = 0; e < E; ++e) w.x[e] = f16_to_float(static_cast<const std::uint16_t*>(logits)[t * E + e]);
      break;
    default: std::copy_n(static_cast<const float*>(logits) + t * E, E, w.x.begin());
  }
  // Scores: the reference's own arithmetic, so results match it bit for bit.
  if (sp.scoring == RouterScoring::sigmoid) {
    for (std::int64_t e = 0; e < E; ++e) w.s[e] = 1.0f / (1.0f + std::exp(-w.x[e]));
  } else {
    softmax_row(w.x.data(), E, w.s.data());
  }
  for (std::int64_t e = 0; e < E; ++e) {
    const float c = w.s[e] + (bias ? bias[e] : 0.0f);
    w.rank[e] = std::isnan(c) ? kNegInf : c;
  }

  w.cand.clear();
  if (sp.grouped()) {
    const std::int64_t n = sp.group_size();
    const bool two = sp.group_score == GroupScore::top2_sum && n >= 2;
    for (std::int64_t g = 0; g < sp.groups; ++g) {
      float a = kNegInf, b = kNegInf;  // best two ranks of the group
      for (std::int64_t i = 0; i < n; ++i) {
        const float r = w.rank[g * n + i];
        if (r > a) b = a, a = r;
        else if (r > b) b = r;
      }
      const float sc = two ? a + b : a;
      w.gscore[g] = std::isnan(sc) ? kNegInf : sc;
    }
    w.gcand.resize(sp.groups);
    for (std::int64_t g = 0; g < sp.groups; ++g) w.gcand[g] = static_cast<std::int32_t>(g);
    top_n(algo, w.gcand, sp.topk_group, Better{w.gscore.data()}, w.gkept.data());
    std::sort(w.gkept.begin(), w.gkept.end());  // candidates in index order
    for (auto g : w.gkept)
      for (std::int64_t i = 0; i < n; ++i) w.cand.push_back(static_cast<std::int32_t>(g * n + i));
  } else {
    for (std::int64_t e = 0; e < E; ++e) w.cand.push_back(static_cast<std::int32_t>(e));
  }

  std::int32_t* id = ids + t * K;
  float* wt = weights + t * K;
  top_n(algo, w.cand, k, Better{w.rank.data()}, id);
  double sum = 0;
  for (std::int64_t j = 0; j < k; ++j) sum += std::isnan(w.s[id[j]]) ? 0.0 : w.s[id[j]];
  for (std::int64_t j = 0; j < k; ++j) {
    double v = std::isnan(w.s[id[j]]) ? 0.0 : w.s[id[j]];
    if (sp.renormalize && sum > 0) v /= sum;
    wt[j] = static_cast<float>(v * sp.rsf);
  }
  for (std::int64_t i = 0; i < sp.shared; ++i) {
    id[k + i] = static_cast<std::int32_t>(E + i);
    wt[k + i] = 1.0f;
  }
}

Select parse_select(const std::string& s) {
  if (s == "heap") return Select::heap;
  if (s == "partial_sort") return Select::partial_sort;
  if (s == "iterative") return Select::iterative;
  throw Error("router cpu: unknown select '" + s + "': use heap, partial_sort or iterative");
}

}  // namespace

BackendImpl cpu_backend() {
  BackendImpl b;
  b.backend = Backend::cpu;
  b.config_params.push_back(int_param("rows_per_task", 16, 1, 1 << 20, "smallest block of rows a worker thread takes"));
  ParamSpec sel;
  sel.name = "select";
  sel.kind = ParamKind::Choice;
  sel.default_value = std::string("heap");
  sel.choices = kSelect;
  sel.help = "top-k algorithm: heap (one comparison per rejected expert), partial_sort, iterative (k scans)";
  b.config_params.push_back(sel);

  b.space = [](const Params&, const DeviceInfo&, bool full) {
    std::vector<Params> out;
    for (auto r : kRowsPerTask) {
      if (!full && r == 1) continue;  // one row per task only pays when rows are huge
      for (auto& s : kSelect) out.push_back(Params{{"rows_per_task", r}, {"select", s}});
    }
    return out;
  };
  b.default_config = [](const Params& problem, const DeviceInfo&) {
    const RouterSpec sp = RouterSpec::from(problem);
    // k scans are cheapest while k is small against E; the heap otherwise.
    const bool scan = sp.topk <= 2;
    return Params{{"rows_per_task", std::int64_t{16}}, {"select", std::string(scan ? "iterative" : "heap")}};
  };
  b.invalid_reason = [](const Params&, const Params& config, const DeviceInfo&) -> std::string {
    if (config.i("rows_per_task") < 1) return "rows_per_task must be at least 1";
    parse_select(config.s("select"));
    return "";
  };
  b.run = [](const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
             const LaunchContext& ctx) {
    const RouterSpec sp = RouterSpec::from(problem);
    const Select algo = parse_select(config.s("select"));
    const TensorRef& logits = need(in, "logits");
    const float* bias = sp.bias ? need(in, "bias").as<const float>() : nullptr;
    float* weights = need(out, "weights").as<float>();
    std::int32_t* ids = need(out, "ids").as<std::int32_t>();
    parallel_for(sp.tokens, ctx.threads, config.i("rows_per_task"), [&](std::int64_t b0, std::int64_t e0) {
      Scratch w(sp);
      for (std::int64_t t = b0; t < e0; ++t) route_row(sp, algo, logits.data, bias, t, w, weights, ids);
    });
  };
  return b;
}

}  // namespace moe::router
