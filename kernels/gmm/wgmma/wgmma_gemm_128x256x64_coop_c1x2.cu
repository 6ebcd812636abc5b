// Prefill with wide N on a 1x2 cluster: the two CTAs of a cluster take neighbouring N tiles of
// the same expert rows, so each activation tile is loaded once (TMA multicast) for both.
#include "gmm/wgmma/wgmma_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_128x256x64_coop_c1x2() { return make_entry<128, 256, 64, 1, 2, false, false>(); }

}  // namespace moe::gmm::wgmma
