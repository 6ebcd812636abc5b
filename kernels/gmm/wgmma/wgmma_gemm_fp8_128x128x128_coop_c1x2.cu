// fp8 prefill on a 1x2 cluster (CUTLASS's own blockwise example's shape): neighbouring N tiles
// of the same expert rows share each activation tile's TMA load.
#include "gmm/wgmma/wgmma_fp8_gemm.cuh"

namespace moe::gmm::wgmma {

Entry entry_fp8_128x128x128_coop_c1x2() { return make_fp8_entry<128, 128, 128, 1, 2, false>(); }

}  // namespace moe::gmm::wgmma
