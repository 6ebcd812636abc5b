#pragma once
// Pointer alignment the gmm kernels' memory accesses need. A misaligned device access is a
// sticky error that ends the caller's CUDA context, so the host refuses such a view first.
#include <cstddef>
#include <cstdint>
#include <string>

#include "moe/error.hpp"

namespace moe::gmm {

// Throws "gmm <path>: <name> is not <bytes>-byte aligned (<why>): ..." unless p is aligned.
inline void require_aligned(const void* p, std::size_t bytes, const std::string& path, const std::string& name,
                            const std::string& why, const std::string& advice = "") {
  if (reinterpret_cast<std::uintptr_t>(p) % bytes == 0) return;
  throw Error("gmm " + path + ": " + name + " is not " + std::to_string(bytes) + "-byte aligned (" + why +
              "): pass a tensor that starts on a " + std::to_string(bytes) + "-byte boundary" + advice);
}

}  // namespace moe::gmm
