#pragma once
#include <string>

namespace moe::tuner {
// "0.1.0+<git>": what results and journals record as the binary that made them.
std::string version_string();
// The short git revision the binary was built from ("unknown" outside a checkout).
std::string git_revision();
}  // namespace moe::tuner
