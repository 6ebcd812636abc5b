// The host side of combine folded into gmm down (combine_fold.cuh): where the fold is refused and
// how a call's fold tensors are checked and bound.
#include <string>

#include "gmm/alignment.hpp"
#include "gmm/family.hpp"
#include "gmm/mma/cuda_configs.hpp"
#include "moe/error.hpp"

namespace moe::gmm::cuda {

std::string fold_invalid_reason(const GmmSpec& s, const Config& c) {
  const int split = c.split;
  if (!s.down) return "only gmm down folds combine (its output rows are combine's input)";
  if (s.w4()) return "the 4-bit kernels do not fold combine (the fold's code slowed their tile loop): use fold_combine=0";
  if (c.shape.bm != 16)
    return "only the 16-row decode tiles fold combine, not block_m=" + std::to_string(c.shape.bm) + ": use block_m=16";
  if (s.routed_weight) return "folding combine weighs each slot's row once, at the fold: use routed_weight=0";
  if (split > 1 && !s.plain_expert_fn())
    return "folding combine sums split-K's partials itself, which leaves out the expert function's bias: use "
           "split_k=1 with a biased down";
  return {};
}

bool bind_fold(KernelArgs& a, const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out) {
  const auto dst_it = in.find(kFoldInputs[0]);
  if (dst_it == in.end()) return false;
  if (std::string why = fold_invalid_reason(s, c); !why.empty()) throw Error("gmm: " + why);
  const TensorRef& dst = dst_it->second;
  const TensorRef& w = need(in, kFoldInputs[1]);
  const TensorRef& done = need(in, kFoldInputs[2]);
  const TensorRef& o = need(out, kFoldOutput);
  const std::string what = "gmm fold: ";
  if (w.dtype != DType::f32 || w.shape.size() != 2)
    throw Error(what + kFoldInputs[1] + " must be fp32 [tokens, slots], as the router writes the weights");
  const std::int64_t T = w.shape[0], K = w.shape[1];
  if (dst.dtype != DType::i32 || dst.numel() != T * K)
    throw Error(what + kFoldInputs[0] + " must be int32 with a row per slot, " + std::to_string(T * K) +
                " of them, as dispatch writes dst");
  if (o.dtype != s.out_dtype() || o.shape != std::vector<std::int64_t>{T, a.n_out})
    throw Error(what + kFoldOutput + " must be " + std::string(dtype_name(s.out_dtype())) + " [" + std::to_string(T) + ", " +
                std::to_string(a.n_out) + "]");
  if (done.dtype != DType::i32 || done.numel() < a.n_tiles)
    throw Error(what + kFoldInputs[2] + " must hold an int32 counter per N-tile of the config, " +
                std::to_string(a.n_tiles) + " of them, got " + std::to_string(done.numel()));
  // Each thread of a CTA keeps the bits of 32 N-tiles (combine_fold.cuh); every kernel has 128 or more.
  if (a.n_tiles > 32 * 128)
    throw Error(what + std::to_string(a.n_tiles) + " N-tiles are more than a fold counts (4096): use a wider block_n");
  require_aligned(o.data, 4, "cuda", kFoldOutput, "two 16-bit values are stored as one 32-bit word");
  require_aligned(done.data, 4, "cuda", kFoldInputs[2], "counted with 32-bit atomics");
  a.fold = {dst.as<const std::int32_t>(), w.as<const float>(), o.as<std::uint16_t>(), done.as<std::int32_t>(),
            static_cast<int>(T), static_cast<int>(K)};
  return true;
}

}  // namespace moe::gmm::cuda

namespace moe {

std::string gmm_fold_combine_invalid(const Params& problem, const Params& config) {
  if (gmm_tile_map_block_m(config) == 0)
    return "folding combine needs a kernel that walks a tile map (kernel=mma, or the fp8 and 4-bit decode "
           "kernels), not " + (config.has("kernel") ? config.s("kernel") : std::string("this one"));
  return gmm::cuda::fold_invalid_reason(GmmSpec::parse(problem), gmm::cuda::parse_config(config));
}

}  // namespace moe
