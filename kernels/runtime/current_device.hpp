#pragma once
// The device check of moe::Kernel's calls, through the replaceable runtime of
// moe/cuda_launch_api.hpp so it is tested without a GPU.
#include <string>

namespace moe {

// Throws unless `expected` is the calling thread's current device: a config chosen for one
// device must not launch on another (`what` names the caller in the message).
void require_current_device(int expected, const std::string& what);

}  // namespace moe
