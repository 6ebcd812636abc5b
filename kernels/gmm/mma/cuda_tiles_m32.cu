// Small-batch shapes: 32-row M tiles, a few rows per expert.
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

void add_tiles_m32(std::vector<TileEntry>& v) {
  //                     BM  BN  BK  WM WN  ST  f16
  v.push_back(tile_entry<32, 64, 64, 1, 4, 4, false>());
  v.push_back(tile_entry<32, 128, 64, 1, 4, 4, true>());
  v.push_back(tile_entry<32, 128, 64, 2, 2, 3, false>());
}

}  // namespace moe::gmm::cuda
