// fp8 with few rows per expert: 64-row tiles (the smallest a warpgroup's wgmma takes), the two
// consumer warpgroups alternating tiles so one's epilogue hides under the other's mainloop.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_fp8_64x128x128_pingpong() { return make_fp8_entry<64, 128, 128, 1, 1, true>(); }

}  // namespace moe::gmm::wgmma
