// Prefill with wide N: 128x256x64, two consumer warpgroups on one tile.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_128x256x64_coop() { return make_entry<128, 256, 64, 1, 1, false, false>(); }

}  // namespace moe::gmm::wgmma
