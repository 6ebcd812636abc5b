#pragma once
// The public entry points' refusal of outputs that share memory with anything else of the call.
// A kernel reads its inputs while it writes its outputs (tiles of one, rows of another), so an
// output over an input gives wrong numbers on every backend, and two outputs over one buffer
// keep whichever was written last. No entry point is meant to work in place.
#include <cstddef>
#include <string>

#include "moe/family.hpp"

namespace moe {

// An Error naming the two tensors when an output's bytes meet an input's, another output's, or
// the workspace's (`workspace_bytes` bytes at `workspace`; none when null). Views of no elements
// occupy no memory.
void check_disjoint_views(const std::string& family, const RefMap& in, const RefMap& out, const void* workspace,
                          std::size_t workspace_bytes);

}  // namespace moe
