#pragma once
// The 4-bit decode kernel's instantiations (each shape: up and down, mxfp4 and int4) and their
// launch plans (shared-memory opt-in, occupancy, persistent grid), for one value of FN: the plain
// kernels are one unit (w4_mma_tiles.cu), those computing the problem's expert function another
// (w4_mma_tiles_fn.cu), so each compiles in parallel with the other.
#include "gmm/w4_mma/w4_mma_kernel.cuh"
#include "moe/error.hpp"

namespace moe::gmm::w4_mma {

template <int BM, int BN, int BK, int WN, int ST, bool UP, bool MX, bool FN>
cuda::PlannedLaunch plan_one(const Args& a) {
  constexpr cuda::TileShape shape{BM, BN, BK, 1, WN, ST};
  const void* kern = reinterpret_cast<const void*>(&cuda::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, UP, MX, FN>);
  return cuda::plan_persistent(kern, shape, w4_mma::smem_bytes(shape), a.b, "4-bit ");
}

template <bool FN>
struct Entry {
  cuda::TileShape shape;
  cuda::PlannedLaunch (*plan[2][2])(const Args&);  // [down][mxfp4]
};

template <bool FN, int BM, int BN, int BK, int WN, int ST>
Entry<FN> entry() {
  return {cuda::TileShape{BM, BN, BK, 1, WN, ST},
          {{&plan_one<BM, BN, BK, WN, ST, true, false, FN>, &plan_one<BM, BN, BK, WN, ST, true, true, FN>},
           {&plan_one<BM, BN, BK, WN, ST, false, false, FN>, &plan_one<BM, BN, BK, WN, ST, false, true, FN>}}};
}

// Keep in the order of tiles() (w4_mma_backend.cpp) and the emulated list (w4_mma_emu.cpp).
template <bool FN>
cuda::PlannedLaunch plan_main_of(const cuda::TileShape& t, bool down, bool mxfp4, const Args& a) {
  static const Entry<FN> entries[] = {entry<FN, 16, 128, 128, 4, 4>(), entry<FN, 16, 128, 64, 4, 4>(),
                                      entry<FN, 16, 64, 32, 4, 4>(), entry<FN, 32, 128, 64, 4, 4>(),
                                      entry<FN, 64, 128, 64, 8, 3>(), entry<FN, 128, 128, 64, 8, 3>()};
  for (const Entry<FN>& e : entries)
    if (e.shape == t) return e.plan[down ? 1 : 0][mxfp4 ? 1 : 0](a);
  throw Error("gmm: no 4-bit mma kernel of this tile shape");
}

}  // namespace moe::gmm::w4_mma
