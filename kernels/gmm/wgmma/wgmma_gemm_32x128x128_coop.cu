// Experts of a few dozen rows (decode at large batch, small prefills): the swapped-operand
// GEMM, 128 weight rows by 32 token rows a tile, so a 64-row wgmma is not three-quarters
// padding. K in 128-wide slices.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_32x128x128_coop_swapped() { return make_swapped_entry<128, 32, 128, false>(); }

}  // namespace moe::gmm::wgmma
