// Launcher of the dispatch gather (kernels in cuda_gather_kernels.cuh).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "moe/cuda_launch_api.hpp"
#include "dispatch/cuda_gather_kernels.cuh"
#include "dispatch/cuda_launch.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::dispatch_cuda {

using namespace gather_kernels;

void gather(const GatherArgs& a, const ScatterArgs& by_token, int order, int threads, int rows_per_cta, int vec,
            int unroll, void* stream) {
  const std::string cfg = "order=" + std::string(order ? "token" : "row") + " threads=" + std::to_string(threads) +
                          " vec=" + std::to_string(vec) + " unroll=" + std::to_string(unroll) +
                          " rows=" + std::to_string(rows_per_cta);
  const RowKernel rk = order == 0 ? find_kernel<false>(threads, vec, unroll) : nullptr;
  const TokenKernel tk = order == 1 ? find_kernel<true>(threads, vec, unroll) : nullptr;
  if (!rk && !tk) throw Error("dispatch gather: no instantiation for " + cfg);
  if (rows_per_cta < 1 || rows_per_cta > kMaxGroups || threads % rows_per_cta || threads / rows_per_cta < 32)
    throw Error("dispatch gather: " + cfg + " must give each row (token) whole warps, at most 4 per CTA");
  if (a.K < 1 || a.K > kMaxSlots) throw Error("dispatch gather: K=" + std::to_string(a.K) + " is not supported");
  const auto misaligned = [vec](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % vec != 0; };
  if (a.row_bytes % vec || misaligned(a.x) || misaligned(a.x_sorted))
    throw Error("dispatch gather: rows of " + std::to_string(a.row_bytes) + " bytes or the buffers are not " +
                std::to_string(vec) + "-byte aligned: use a smaller vec");
  if (a.rows <= 0) return;  // nothing routed here: x_sorted is empty
  Dev d{static_cast<const char*>(a.x), a.src, static_cast<char*>(a.x_sorted), a.rows, a.slots, a.K,
              a.row_bytes, a.used_rows};
  const auto s = static_cast<cudaStream_t>(stream);
  long long blocks = 0;
  if (rk) {
    blocks = (a.rows + rows_per_cta - 1) / rows_per_cta;
    if (blocks > 0x7fffffffLL) throw Error("dispatch gather: too many rows for one grid");
    launch_kernel_args(reinterpret_cast<const void*>(rk), static_cast<unsigned>(blocks), threads, 0, s, d,
                       rows_per_cta);
  } else {
    if (!by_token.dst || by_token.T < 1) throw Error("dispatch gather: the token order needs dst");
    const long long token_blocks = (by_token.T + rows_per_cta - 1) / rows_per_cta;
    blocks = token_blocks + (a.rows + kPadRowsPerBlock - 1) / kPadRowsPerBlock;
    if (blocks > 0x7fffffffLL) throw Error("dispatch gather: too many tokens for one grid");
    Tok tok{by_token.dst, by_token.T, token_blocks};
    launch_kernel_args(reinterpret_cast<const void*>(tk), static_cast<unsigned>(blocks), threads, 0, s, d, tok,
                       rows_per_cta);
  }
}

}  // namespace moe::dispatch_cuda
