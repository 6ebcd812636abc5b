#pragma once
// The config space of a decode kernel built on the mma kernel's tile map (fp8_mma, w4_mma):
// every tile and split-K its own rules accept, curated unless the full space is asked for.
#include <vector>

#include "gmm/mma/cuda_configs.hpp"

namespace moe::gmm::cuda {

template <class Splits, class Invalid>
std::vector<Config> decode_space(const std::vector<TileShape>& tiles, const Splits& splits, double rows_per_expert,
                                 bool full, Invalid&& invalid_reason) {
  std::vector<Config> v;
  for (auto& t : tiles)
    for (int split : splits) {
      const Config c{t, split, 1};
      if (!invalid_reason(c).empty()) continue;
      // Curated: no 32-row tile for experts of a few rows, split-K only where rows are few.
      if (!full && ((t.bm > 16 && t.bm > 2 * rows_per_expert) || (split > 1 && rows_per_expert > 64))) continue;
      v.push_back(c);
    }
  return v;
}

}  // namespace moe::gmm::cuda
