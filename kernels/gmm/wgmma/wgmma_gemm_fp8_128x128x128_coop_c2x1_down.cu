// fp8 down at prefill, bf16 rows out of the epilogue (the up unit's shape, its output type).
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Variant fp8_down_128x128x128_coop_c2x1() { return make_fp8_down<128, 128, 128, 2, 1, false>(); }

}  // namespace moe::gmm::wgmma
