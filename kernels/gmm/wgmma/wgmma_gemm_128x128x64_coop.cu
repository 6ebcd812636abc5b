// The prefill workhorse: 128x128x64, two consumer warpgroups on one tile.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_128x128x64_coop() { return make_entry<128, 128, 64, 1, 1, false, false>(); }

}  // namespace moe::gmm::wgmma
