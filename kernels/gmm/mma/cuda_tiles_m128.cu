// Prefill shapes: 128-row M tiles, tensor-core bound.
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

void add_tiles_m128(std::vector<TileEntry>& v) {
  //                     BM   BN  BK  WM WN  ST  f16
  v.push_back(tile_entry<128, 64, 64, 2, 2, 4, false>());
  v.push_back(tile_entry<128, 128, 32, 2, 2, 4, false>());
  v.push_back(tile_entry<128, 128, 64, 2, 2, 3, true>());
  v.push_back(tile_entry<128, 128, 64, 2, 4, 3, false>());
  v.push_back(tile_entry<128, 128, 32, 2, 4, 4, false>());
  v.push_back(tile_entry<128, 256, 32, 2, 4, 3, false>());  // 64x64 warp tiles, the classic mma.sync peak shape
}

}  // namespace moe::gmm::cuda
