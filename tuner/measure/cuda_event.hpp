#pragma once
// A CUDA event that is destroyed on every path out, errors included: a worker runs for a
// whole sweep, and events leaked per failed candidate add up.
#include <cuda_runtime.h>

#include "moe/cuda_device.hpp"

namespace moe::tuner {

struct Event {
  cudaEvent_t e = nullptr;
  Event() { cuda_check(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

}  // namespace moe::tuner
