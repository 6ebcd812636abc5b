// fp8 down with few rows per expert, bf16 rows out of the epilogue.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Variant fp8_down_64x128x128_pingpong() { return make_fp8_down<64, 128, 128, 1, 1, true>(); }

}  // namespace moe::gmm::wgmma
