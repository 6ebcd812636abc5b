#pragma once
// Launch of the combine kernel (cuda_kernel.cuh) for one input dtype, included by one .cu per
// dtype so the instantiations build in parallel.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "moe/cuda_launch_api.hpp"
#include "combine/cuda_kernel.cuh"
#include "combine/cuda_launch.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::combine_cuda::detail {

namespace {

inline bool misaligned(const void* p, std::size_t a) { return p && reinterpret_cast<std::uintptr_t>(p) % a != 0; }

template <class Tin, class Tout, bool RMS>
void launch(const Args& a, const Config& c, void* stream) {
  const std::string cfg = "threads=" + std::to_string(c.threads) + " tokens_per_cta=" +
                          std::to_string(c.tokens_per_cta) + " vec=" + std::to_string(c.vec);
  const Kernel k = find_kernel<Tin, Tout, RMS>(c);
  if (!k) throw Error("combine: no kernel instantiated for " + cfg);
  if (c.tokens_per_cta < 1 || c.tokens_per_cta > kMaxTpc || c.threads % c.tokens_per_cta ||
      (c.threads / c.tokens_per_cta) % 32)
    throw Error("combine: " + cfg + " must give each token whole warps");
  if (a.K < 1 || a.K > kCombineMaxSlots) throw Error("combine: K=" + std::to_string(a.K) + " is not supported");
  const std::size_t N = c.vec / sizeof(Tin);
  if (a.D % N || misaligned(a.y, c.vec) || misaligned(a.residual, c.vec) || misaligned(a.gamma, c.vec) ||
      misaligned(a.residual_out, c.vec) || misaligned(a.out, N * sizeof(Tout) > 16 ? 16 : N * sizeof(Tout)))
    throw Error("combine: hidden " + std::to_string(a.D) + " or a buffer is not aligned for vec=" +
                std::to_string(c.vec) + ": use a smaller vec");
  if (a.D > 0x7fffffffLL / static_cast<long long>(sizeof(Tin)))
    throw Error("combine: hidden " + std::to_string(a.D) + " makes a row of 2 GiB or more, which is not supported");
  if (a.T <= 0) return;
  const long long blocks = (a.T + c.tokens_per_cta - 1) / c.tokens_per_cta;
  if (blocks > 0x7fffffffLL) throw Error("combine: too many tokens for one grid");
  Dev d{a.y, a.dst, a.w, a.residual, a.gamma, a.out, a.residual_out, a.T, a.D, a.rows, a.K, a.eps};
  int tpc = c.tokens_per_cta;
  launch_kernel_args(reinterpret_cast<const void*>(k), static_cast<unsigned>(blocks), static_cast<unsigned>(c.threads), 0,
                     stream, d, tpc);
}

template <class Tin, class Tout>
void launch_epilogue(const Args& a, bool rmsnorm, const Config& c, void* stream) {
  if (rmsnorm)
    launch<Tin, Tout, true>(a, c, stream);
  else
    launch<Tin, Tout, false>(a, c, stream);
}

}  // namespace

}  // namespace moe::combine_cuda::detail
