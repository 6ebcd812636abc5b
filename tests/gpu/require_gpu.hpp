#pragma once
// GPU tests skip where no device is usable, saying why. On a machine that must run them
// (MOEBENCH_REQUIRE_GPU=1), a missing device or a too-old driver fails instead: a GPU suite
// that skipped everything must not pass for one that ran.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "moe/cuda_device.hpp"

namespace moe::testing {

inline bool gpu_required() {
  const char* v = std::getenv("MOEBENCH_REQUIRE_GPU");
  return v && std::string(v) == "1";
}

}  // namespace moe::testing

#define REQUIRE_GPU()                                                                         \
  do {                                                                                        \
    if (::moe::cuda_device_count() == 0) {                                                    \
      if (::moe::testing::gpu_required()) FAIL() << ::moe::cuda_unavailable_reason();         \
      GTEST_SKIP() << ::moe::cuda_unavailable_reason();                                       \
    }                                                                                         \
  } while (0)
