#pragma once
// A launch plan whose call waits on the host partway: a library that takes the experts' row
// counts as host arguments copies them back and synchronizes its stream on every call. A bench
// times such a call with CUDA events, which include the wait, not with CUPTI's kernel durations,
// which would leave it out. Plans that wait mix this in; any LaunchPlan can be asked.
#include "moe/family.hpp"

namespace moe {

struct HostWait {
  virtual ~HostWait() = default;
};

inline bool waits_on_host(const LaunchPlan* p) { return dynamic_cast<const HostWait*>(p) != nullptr; }

}  // namespace moe
