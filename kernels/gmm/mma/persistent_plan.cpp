// The launch plan of a kernel walking the tile map (this folder's, fp8_mma/'s, w4_mma/'s): a
// persistent grid of as many CTAs as fit at once, never more than the tiles the rows can make
// (every expert may end in a partial M-tile), nor than a test's max_ctas.
#include <algorithm>
#include <string>

#include "gmm/mma/cuda_configs.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::cuda {

PlannedLaunch plan_persistent(const void* kern, const TileShape& shape, std::size_t smem, const KernelArgs& a,
                              const char* what) {
  const KernelFacts f = kernel_facts(kern, shape.threads(), smem);
  if (f.blocks_per_sm < 1)
    throw Error(std::string("gmm: ") + what + "tile " + std::to_string(shape.bm) + "x" + std::to_string(shape.bn) + "x" +
                std::to_string(shape.bk) + " does not fit on an SM of this device (shared memory or registers): pick a smaller config");
  long long grid = ((a.rows + shape.bm - 1) / shape.bm + a.experts) * static_cast<long long>(a.n_tiles) * a.split;
  grid = std::min<long long>(grid, static_cast<long long>(f.blocks_per_sm) * std::max(a.sm_count, 1));
  if (a.max_ctas > 0) grid = std::min<long long>(grid, a.max_ctas);
  PlannedLaunch p;
  p.func = kern;
  p.grid = static_cast<unsigned>(std::max<long long>(grid, 0));
  p.threads = static_cast<unsigned>(shape.threads());
  p.smem = smem;
  return p;
}

}  // namespace moe::gmm::cuda
