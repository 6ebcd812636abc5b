// fp8 prefill: 128x128x128 (one scale block of K per stage), two consumer warpgroups on one
// tile, a 2x1 cluster: two M tiles of an expert share each weight tile's TMA load. (CUTLASS's
// own example clusters 1x2; the backend's configs name cluster_m only, as the bf16 tiles do.)
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_fp8_128x128x128_coop_c2x1() { return make_fp8_entry<128, 128, 128, 2, 1, false>(); }

}  // namespace moe::gmm::wgmma
