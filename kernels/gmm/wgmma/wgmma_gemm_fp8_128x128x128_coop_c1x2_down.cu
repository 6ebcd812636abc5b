// fp8 down on a 1x2 cluster, bf16 rows out of the epilogue.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Variant fp8_down_128x128x128_coop_c1x2() { return make_fp8_down<128, 128, 128, 1, 2, false>(); }

}  // namespace moe::gmm::wgmma
