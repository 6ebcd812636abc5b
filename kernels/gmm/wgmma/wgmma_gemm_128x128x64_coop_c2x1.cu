// 128x128x64 on a 2x1 cluster: the two CTAs of a cluster share each weight tile through TMA multicast.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_128x128x64_coop_c2x1() { return make_entry<128, 128, 64, 2, 1, false, false>(); }

}  // namespace moe::gmm::wgmma
