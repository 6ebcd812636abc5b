// Experts of one or two 64-row tiles with wide N (up's 2I, down's hidden): a 64x256 tile per
// consumer warpgroup, the two alternating so one's epilogue hides under the other's mainloop.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_64x256x64_pingpong() { return make_entry<64, 256, 64, 1, 1, true, false>(); }

}  // namespace moe::gmm::wgmma
