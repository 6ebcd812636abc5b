// Fewer rows per expert: 64x128x64, the two consumer warpgroups alternate tiles (one's epilogue hides under the other's math).
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_64x128x64_pingpong() { return make_entry<64, 128, 64, 1, 1, true, false>(); }

}  // namespace moe::gmm::wgmma
