#include "common/routing_gen.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/error.hpp"

namespace moe {

namespace {

// Expert popularity for the distribution; zipf ranks are shuffled so expert 0 is not always hot.
std::vector<double> popularity(std::int64_t E, const InputOptions& opt, Rng& rng) {
  std::vector<double> p(E, 1.0);
  if (opt.dist == "zipf") {
    std::vector<std::int64_t> rank(E);
    std::iota(rank.begin(), rank.end(), 0);
    for (std::int64_t i = E - 1; i > 0; --i) std::swap(rank[i], rank[rng.below(i + 1)]);
    for (std::int64_t e = 0; e < E; ++e) p[e] = 1.0 / std::pow(static_cast<double>(rank[e] + 1), opt.zipf_s);
  } else if (opt.dist != "uniform" && opt.dist != "replay") {
    throw Error("unknown routing distribution '" + opt.dist + "': use uniform, zipf or a .npy file");
  }
  return p;
}

// k distinct experts by weighted sampling without replacement (Efraimidis-Spirakis keys).
void sample_k(const std::vector<double>& p, std::int64_t k, Rng& rng, std::int32_t* out) {
  const std::int64_t E = static_cast<std::int64_t>(p.size());
  std::vector<std::pair<double, std::int32_t>> keys(E);
  for (std::int64_t e = 0; e < E; ++e)
    keys[e] = {std::log(1.0 - rng.uniform()) / p[e], static_cast<std::int32_t>(e)};
  std::partial_sort(keys.begin(), keys.begin() + k, keys.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (std::int64_t j = 0; j < k; ++j) out[j] = keys[j].second;
}

}  // namespace

Tensor routing_ids(std::int64_t T, std::int64_t E, std::int64_t k, std::int64_t S, const InputOptions& opt,
                   Rng& rng) {
  if (k > E) throw Error("top-k " + std::to_string(k) + " is larger than the expert count " + std::to_string(E));
  const std::int64_t K = k + S;
  Tensor ids(DType::i32, {T, K});
  auto* o = ids.data<std::int32_t>();
  if (opt.replay) {
    const Tensor& r = *opt.replay;
    if (r.shape().size() != 2 || r.shape()[0] < 1)
      throw Error("routing replay must be ids [N,k] or logits [N,E], got " + shape_str(r.shape()));
    const std::int64_t N = r.shape()[0], C = r.shape()[1];
    const bool is_ids = r.dtype() == DType::i32 || r.dtype() == DType::i64;
    if (is_ids && C < k) throw Error("replayed ids have " + std::to_string(C) + " columns, fewer than top-k " + std::to_string(k));
    if (!is_ids && C != E) throw Error("replayed logits have " + std::to_string(C) + " experts, the problem has " + std::to_string(E));
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t row = t % N;
      if (is_ids) {
        for (std::int64_t j = 0; j < k; ++j) {
          // Checked before narrowing: 2^32+3 must not wrap to a small id, and an id no expert has
          // would leave the problem empty (and every check trivially passing).
          const double id = r.get(row * C + j);
          if (!(id >= 0 && id < static_cast<double>(E)))
            throw Error("replayed ids (--dist): row " + std::to_string(row) + " column " + std::to_string(j) +
                        " holds expert id " + std::to_string(static_cast<long long>(id)) + ", outside 0.." +
                        std::to_string(E - 1) + " (the problem has " + std::to_string(E) +
                        " experts): capture ids with this model's expert count");
          o[t * K + j] = static_cast<std::int32_t>(id);
        }
      } else {
        std::vector<std::int32_t> idx(E);
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
          const double va = r.get(row * C + a), vb = r.get(row * C + b);
          return va > vb || (va == vb && a < b);
        });
        for (std::int64_t j = 0; j < k; ++j) o[t * K + j] = idx[j];
      }
    }
  } else {
    const auto p = popularity(E, opt, rng);
    for (std::int64_t t = 0; t < T; ++t) sample_k(p, k, rng, o + t * K);
  }
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < S; ++i) o[t * K + k + i] = static_cast<std::int32_t>(E + i);
  return ids;
}

Tensor routing_logits(std::int64_t T, std::int64_t E, DType dtype, const InputOptions& opt, Rng& rng) {
  Tensor logits(dtype, {T, E});
  if (opt.replay) {
    const Tensor& r = *opt.replay;
    if (r.shape().size() != 2 || r.shape()[0] < 1 || r.shape()[1] != E || !is_float(r.dtype()))
      throw Error("replayed logits must be a float array [N," + std::to_string(E) + "] with N >= 1, got " +
                  std::string(dtype_name(r.dtype())) + shape_str(r.shape()));
    const std::int64_t N = r.shape()[0];
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t e = 0; e < E; ++e) logits.set(t * E + e, r.get((t % N) * E + e));
    return logits;
  }
  const auto p = popularity(E, opt, rng);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t e = 0; e < E; ++e) logits.set(t * E + e, 2.0 * rng.normal() + std::log(p[e]));
  return logits;
}

Tensor routing_weights(std::int64_t T, std::int64_t k, std::int64_t S, Rng& rng) {
  const std::int64_t K = k + S;
  Tensor w(DType::f32, {T, K});
  auto* o = w.data<float>();
  for (std::int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (std::int64_t j = 0; j < k; ++j) sum += (o[t * K + j] = static_cast<float>(rng.uniform(0.05, 1.0)));
    for (std::int64_t j = 0; j < k; ++j) o[t * K + j] = static_cast<float>(o[t * K + j] / sum);
    for (std::int64_t j = k; j < K; ++j) o[t * K + j] = 1.0f;
  }
  return w;
}

Tensor random_tensor(DType dtype, const Shape& shape, Rng& rng, double scale) {
  Tensor t(dtype, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, scale * rng.normal());
  return t;
}

}  // namespace moe
