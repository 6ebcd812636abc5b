// Mid-batch shapes: 64-row M tiles.
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

void add_tiles_m64(std::vector<TileEntry>& v) {
  //                     BM  BN  BK  WM WN  ST  f16
  v.push_back(tile_entry<64, 64, 64, 2, 2, 4, false>());
  v.push_back(tile_entry<64, 128, 64, 2, 2, 3, true>());
  v.push_back(tile_entry<64, 128, 32, 2, 2, 4, false>());
  v.push_back(tile_entry<64, 128, 64, 2, 4, 3, false>());
}

}  // namespace moe::gmm::cuda
