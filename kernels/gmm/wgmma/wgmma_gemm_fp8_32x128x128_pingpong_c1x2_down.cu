// fp8 down with a few dozen rows per expert (swapped operands), bf16 rows out of the epilogue.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Variant fp8_down_32x128x128_pingpong_c1x2_swapped() { return make_fp8_down<128, 32, 128, 2, 1, true, true>(); }

}  // namespace moe::gmm::wgmma
