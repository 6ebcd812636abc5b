// The 4-bit decode kernels computing the problem's expert function (gpt-oss's: interleaved w13,
// bias13 and the clamped SwiGLU, bias2), one instantiation set apart from the plain kernels.
#include "gmm/w4_mma/w4_mma_instances.cuh"

namespace moe::gmm::w4_mma {

template cuda::PlannedLaunch plan_main_of<true>(const cuda::TileShape&, bool, bool, const Args&);

}  // namespace moe::gmm::w4_mma
