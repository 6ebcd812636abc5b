// Decode shapes: a 16-row M tile (one mma row block) over wide N, weights streamed through
// deep pipelines. Split-K (a runtime choice) adds CTAs when few experts are active; where K is
// too short to split (K=96: qwen3-30b-a3b --tp 8 down), the two-warp 16x32 tile splits N instead.
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

void add_tiles_m16(std::vector<TileEntry>& v) {
  //                     BM  BN  BK  WM WN  ST  f16
  v.push_back(tile_entry<16, 64, 64, 1, 4, 4, true>());
  v.push_back(tile_entry<16, 128, 64, 1, 4, 4, false>());
  v.push_back(tile_entry<16, 128, 64, 1, 4, 3, false>());
  v.push_back(tile_entry<16, 64, 32, 1, 4, 4, false>());
  v.push_back(tile_entry<16, 32, 32, 1, 2, 4, false>());
}

}  // namespace moe::gmm::cuda
