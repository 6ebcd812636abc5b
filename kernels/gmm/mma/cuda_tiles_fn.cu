// The expert-function kernels (gpt-oss's interleaved w13, biases and clamped SwiGLU: FN), bf16
// and f16, for one shape of each block_m: the ones the plain lists also build in f16. A problem
// that is not silu(gate)*up on split rows without biases runs on these alone.
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

namespace {

template <int BM, int BN, int BK, int WM, int WN, int ST>
void set_fn(std::vector<TileEntry>& v) {
  for (TileEntry& e : v)
    if (e.shape == TileShape{BM, BN, BK, WM, WN, ST}) {
      e.up_fn[0] = &plan_mma<BM, BN, BK, WM, WN, ST, true, false, true>;
      e.up_fn[1] = &plan_mma<BM, BN, BK, WM, WN, ST, true, true, true>;
      e.down_fn[0] = &plan_mma<BM, BN, BK, WM, WN, ST, false, false, true>;
      e.down_fn[1] = &plan_mma<BM, BN, BK, WM, WN, ST, false, true, true>;
      return;
    }
  throw Error("gmm: the expert-function kernel's shape is not in the tile lists");
}

}  // namespace

void add_fn_kernels(std::vector<TileEntry>& v) {
  //     BM   BN  BK  WM WN  ST
  set_fn<16, 64, 64, 1, 4, 4>(v);
  set_fn<32, 128, 64, 1, 4, 4>(v);
  set_fn<64, 128, 64, 2, 2, 3>(v);
  set_fn<128, 128, 64, 2, 2, 3>(v);
}

}  // namespace moe::gmm::cuda
