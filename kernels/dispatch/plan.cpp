#include "dispatch/plan.hpp"

#include "moe/error.hpp"

namespace moe {

static std::vector<std::int64_t> expert_counts(const std::int32_t* ids, std::int64_t slots, const ExpertRange& r) {
  std::vector<std::int64_t> counts(r.e1 - r.e0, 0);
  for (std::int64_t f = 0; f < slots; ++f)
    if (const auto le = r.local(ids[f]); le >= 0) ++counts[le];
  return counts;
}

static std::int64_t padded(std::int64_t n, std::int64_t A) { return (n + A - 1) / A * A; }

std::int64_t dispatch_rows(const std::int32_t* ids, std::int64_t slots, const ExpertRange& r) {
  std::int64_t rows = 0;
  for (auto c : expert_counts(ids, slots, r)) rows += padded(c, r.A);
  return rows;
}

DispatchPlan plan_dispatch(const std::int32_t* ids, std::int64_t slots, const ExpertRange& r) {
  const auto counts = expert_counts(ids, slots, r);
  const std::int64_t El = r.e1 - r.e0;
  DispatchPlan p;
  p.offsets.assign(El + 1, 0);
  for (std::int64_t e = 0; e < El; ++e) p.offsets[e + 1] = static_cast<std::int32_t>(p.offsets[e] + padded(counts[e], r.A));
  // Visiting slots in ascending f gives each expert its rows in ascending f.
  std::vector<std::int64_t> next(p.offsets.begin(), p.offsets.end() - 1);
  p.src.assign(p.rows(), -1);
  p.dst.assign(slots, -1);
  for (std::int64_t f = 0; f < slots; ++f) {
    const auto le = r.local(ids[f]);
    if (le < 0) continue;
    const std::int64_t row = next[le]++;
    p.dst[f] = static_cast<std::int32_t>(row);
    p.src[row] = static_cast<std::int32_t>(f);
  }
  return p;
}

void check_ids_in_range(const Tensor& ids, std::int64_t E_total) {
  if (ids.dtype() != DType::i32 || ids.shape().size() != 2)
    throw Error("ids must be int32 [tokens, topk+shared], got " + std::string(dtype_name(ids.dtype())) +
                shape_str(ids.shape()));
  const std::int64_t K = ids.shape()[1];
  const auto* v = ids.data<std::int32_t>();
  std::int64_t bad = 0, first = -1;
  for (std::int64_t f = 0; f < ids.numel(); ++f)
    if (v[f] < 0 || v[f] >= E_total) {
      if (first < 0) first = f;
      ++bad;
    }
  if (bad)
    throw Error("ids has " + std::to_string(bad) + " values outside [0," + std::to_string(E_total) +
                "): first at [" + std::to_string(first / K) + "," + std::to_string(first % K) +
                "] = " + std::to_string(v[first]) + "; ids must name routed experts 0..experts-1 or shared " +
                "experts experts..experts+shared-1 (check the experts/shared parameters or the ids file)");
}

}  // namespace moe
