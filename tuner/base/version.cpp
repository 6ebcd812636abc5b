#include "tuner/base/version.hpp"

namespace moe::tuner {
std::string version_string() { return std::string(MOEBENCH_VERSION) + "+" + MOEBENCH_GIT; }
std::string git_revision() { return MOEBENCH_GIT; }
}  // namespace moe::tuner
