// fp8 for experts of a few dozen rows (decode at large batch, small prefills): the
// swapped-operand GEMM, 128 weight rows by 32 token rows a tile, so a 64-row wgmma is not mostly
// padding; the two CTAs of a cluster take neighbouring weight blocks and share each token tile's
// TMA load. Pingpong: one warpgroup's epilogue hides under the other's main loop.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_fp8_32x128x128_pingpong_c1x2_swapped() { return make_fp8_entry<128, 32, 128, 2, 1, true, true>(); }

}  // namespace moe::gmm::wgmma
