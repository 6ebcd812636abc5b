#pragma once
// check_tensors' checks on views (the Python module's tensors), with the same words.
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

void check_views(const std::string& family, const std::vector<TensorSpec>& specs, const RefMap& m,
                 const std::string& what);

}  // namespace moe
