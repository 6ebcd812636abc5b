#pragma once
// The combine problem as typed values, parsed once from Params and checked.
//
// Semantics (the reference defines them, DESIGN.md 1.3):
//   out[t] = sum over slots j with a selected row of w[t,j] * y[row]   (fp32 accumulate)
// ragged: row = dst[t*K+j], selected when 0 <= row < R and w != 0; dense: row = (t, j),
// selected when w != 0. A skipped slot is never multiplied, so NaN in unused rows cannot leak.
// epilogue=rmsnorm, as vLLM's fused_add_rms_norm:
//   residual_out = round_dtype(residual + sum)          (the sum is not rounded first)
//   out = round_out(residual_out * rsqrt(mean(residual_out^2) + eps) * gamma)
// where the norm reads residual_out as stored in dtype (like vLLM, which normalises the
// residual it wrote). vLLM rounds x*rsqrt to dtype before the gamma multiply; we round once,
// which differs by at most an ulp.
#include <cstdint>

#include "common/max_rows.hpp"
#include "moe/dtype.hpp"
#include "moe/params.hpp"

namespace moe {

struct CombineSpec {
  std::int64_t T = 0, D = 0, E = 0, k = 0, S = 0, K = 0, A = 1;
  DType dtype = DType::bf16;      // y, residual, gamma, residual_out
  DType out_dtype = DType::bf16;  // out: dtype or f32
  bool dense = false;             // y [T,K,D] instead of y_sorted [R,D] + dst
  bool rmsnorm = false;
  double eps = 1e-6;

  std::int64_t slots() const { return T * K; }
  // The most rows dispatch can make (the length of y_sorted), whichever experts are local
  // (common/max_rows.hpp).
  std::int64_t max_rows() const { return max_dispatch_rows(T, K, E + S, A); }
  static CombineSpec parse(const Params& p);  // Error naming what is inconsistent
};

// The most slots per token any backend must handle (topk <= 64, shared <= 16).
inline constexpr int kCombineMaxSlots = 80;

}  // namespace moe
