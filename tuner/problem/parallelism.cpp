// How a model's experts are cut across GPUs: tensor parallelism shards each expert's
// intermediate size, expert parallelism hands each rank a slice of the experts; and which --tp
// keep fp8's 128-wide scale blocks whole.
#include <string>
#include <vector>

#include "moe/error.hpp"
#include "tuner/problem/models.hpp"

namespace moe::tuner {

std::vector<int> fp8_tp_values(std::int64_t intermediate) {
  std::vector<int> v;
  for (int tp = 1; tp <= 64 && tp <= intermediate; tp *= 2)
    if (intermediate % tp == 0 && (intermediate / tp) % 128 == 0) v.push_back(tp);
  return v;
}

namespace {

// "1", "1 or 2", "1, 2 or 4".
std::string or_list(const std::vector<int>& v) {
  std::string t;
  for (std::size_t i = 0; i < v.size(); ++i)
    t += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + std::to_string(v[i]);
  return t;
}

}  // namespace

void check_fp8_model(const Params& model, const Params& problem, int tp) {
  const std::string where = "fp8 (block-scaled W8A8)";
  if (model.has("quant") && model.s("quant") != "fp8")
    throw Error(where + ": the model is " + model.s("quant") +
                ", but moebench's fp8 is 128x128 weight blocks with 1x128 dynamic activation groups: tune it in bf16");
  if (problem.has("hidden") && problem.i("hidden") % 128 != 0)
    throw Error(where + " needs the hidden size to be a multiple of 128 (the scale blocks); this model's is " +
                std::to_string(problem.i("hidden")) + ": tune it in bf16");
  if (!problem.has("intermediate") || problem.i("intermediate") % 128 == 0) return;
  const std::int64_t full = problem.i("intermediate") * tp;
  // Deployments shard by powers of two; where TP cuts the blocks, expert parallelism over as many
  // GPUs keeps each expert whole.
  const std::vector<int> good = fp8_tp_values(full);
  std::string todo = good.empty() ? "no --tp gives that for this model; tune it in bf16" : "use --tp " + or_list(good);
  if (!good.empty() && good.front() == 1 && model.has("experts") && model.i("experts") % tp == 0)
    todo += ", or keep each expert whole and split the experts across the GPUs instead: --tp 1 --ep " +
            std::to_string(tp) + " (" + std::to_string(model.i("experts") / tp) + " of the " +
            std::to_string(model.i("experts")) + " experts per rank)";
  throw Error(where + " needs the intermediate size per TP shard to be a multiple of 128, and " + std::to_string(full) +
              " / --tp " + std::to_string(tp) + " = " + std::to_string(problem.i("intermediate")) + " is not: " + todo);
}

void check_w4_model(const Params& model, const Params& problem, int tp) {
  const std::string dt = problem.s("dtype");
  const std::int64_t group = dt == "int4" && problem.has("group") ? problem.i("group") : 32;
  const std::string where = dt + " (4-bit weights, a scale per " + std::to_string(group) + " K elements)";
  if (dt == "int4" && model.has("quant") && model.s("quant").rfind("int4 with", 0) == 0)
    throw Error(where + ": the model is " + model.s("quant") +
                ", but moebench's int4 is grouped scales (group 32 or 128) over K in order: tune it in bf16");
  if (problem.has("hidden") && problem.i("hidden") % group != 0)
    throw Error(where + " needs the hidden size to be a multiple of " + std::to_string(group) + "; this model's is " +
                std::to_string(problem.i("hidden")) + ": tune it in bf16");
  if (!problem.has("intermediate") || problem.i("intermediate") % group == 0) return;
  const std::int64_t full = problem.i("intermediate") * tp;
  std::vector<int> good;
  for (int t = 1; t <= 64 && t <= full; t *= 2)
    if (full % t == 0 && (full / t) % group == 0) good.push_back(t);
  std::string todo = good.empty() ? "no --tp gives that for this model; tune it in bf16" : "use --tp " + or_list(good);
  if (!good.empty() && good.front() == 1 && model.has("experts") && model.i("experts") % tp == 0)
    todo += ", or keep each expert whole and split the experts across the GPUs instead: --tp 1 --ep " + std::to_string(tp);
  throw Error(where + " needs the intermediate size per TP shard to be a multiple of " + std::to_string(group) + ", and " +
              std::to_string(full) + " / --tp " + std::to_string(tp) + " = " + std::to_string(problem.i("intermediate")) +
              " is not: " + todo);
}

Params apply_parallelism(Params model, int tp, int ep, int ep_rank) {
  if (tp < 1) throw Error("--tp must be at least 1, got " + std::to_string(tp));
  if (ep < 1) throw Error("--ep must be at least 1, got " + std::to_string(ep));
  if (ep_rank < 0 || ep_rank >= ep)
    throw Error("--ep-rank " + std::to_string(ep_rank) + " is outside [0, " + std::to_string(ep) + ") for --ep " +
                std::to_string(ep));
  auto divisors = [](std::int64_t n) {
    std::vector<std::string> d;
    for (std::int64_t i = 1; i <= n && i <= 64; ++i)
      if (n % i == 0) d.push_back(std::to_string(i));
    std::string t;
    for (auto& x : d) t += (t.empty() ? "" : ", ") + x;
    return t;
  };
  const std::int64_t I = model.i("intermediate");
  if (I % tp != 0)
    throw Error("--tp " + std::to_string(tp) + " does not divide the expert intermediate size " + std::to_string(I) +
                ": use a tp that divides it (" + divisors(I) + (I > 64 ? ", ..." : "") + ")");
  model.set("intermediate", I / tp);
  if (ep > 1) {
    const std::int64_t E = model.i("experts");
    if (E % ep != 0)
      throw Error("--ep " + std::to_string(ep) + " does not divide the " + std::to_string(E) +
                  " routed experts: use an ep that divides it (" + divisors(E) + (E > 64 ? ", ..." : "") + ")");
    model.set("expert_begin", std::int64_t{ep_rank} * E / ep);
    model.set("expert_end", std::int64_t{ep_rank + 1} * E / ep);
  }
  return model;
}

}  // namespace moe::tuner
