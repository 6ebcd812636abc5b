#pragma once
// Captured routing for `--dist FILE.npy`: a NumPy array (logits [N,E] or ids [N,k]) the
// sweep replays instead of synthetic routing. Only what routing needs is read: C-order,
// little-endian f2/f4/f8/i4/i8.
#include <string>

#include "moe/tensor.hpp"

namespace moe::tuner {

// Errors name the file and say what is unsupported.
Tensor load_replay_npy(const std::string& path);

}  // namespace moe::tuner
