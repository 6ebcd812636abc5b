#pragma once
// The dispatch problem as typed values: parsed once from Params, checked, shared by the
// reference, the backends and the combine family (which routes through the same maps).
#include <cstdint>

#include "common/max_rows.hpp"
#include "moe/dtype.hpp"
#include "moe/params.hpp"

namespace moe {

struct DispatchSpec {
  std::int64_t T = 0;        // tokens
  std::int64_t D = 0;        // hidden size
  std::int64_t E = 0;        // routed experts
  std::int64_t k = 0;        // routed slots per token
  std::int64_t S = 0;        // fused shared experts (ids E..E+S-1)
  std::int64_t K = 0;        // k + S slots per token
  std::int64_t E_total = 0;  // E + S: valid ids are [0, E_total)
  std::int64_t A = 1;        // each local expert's rows padded to a multiple of A
  std::int64_t e0 = 0, e1 = 0;  // local expert range [e0, e1)
  DType dtype = DType::bf16;  // of x (fp8: bf16 in, e4m3 out)
  bool fp8 = false;           // dtype=fp8: the gather quantizes x per row and 128 columns (DESIGN.md 1.6)
  bool ue8m0 = false;         // fp8: power-of-two scales

  DType out_dtype() const { return fp8 ? DType::e4m3 : dtype; }
  std::int64_t slots() const { return T * K; }
  std::int64_t local() const { return e1 - e0; }
  // The most rows any routing can produce (common/max_rows.hpp).
  std::int64_t max_rows() const { return max_dispatch_rows(T, K, local(), A); }

  // From a complete problem; an Error names the inconsistent values and what to change.
  static DispatchSpec parse(const Params& p);
};

}  // namespace moe
