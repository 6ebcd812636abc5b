#pragma once
// What went wrong when CUTLASS answers a status. Its adapter reads (and so clears) the CUDA error
// before it returns "Error Internal", so the caller would never see the CUDA error: ask the
// runtime again (the error still pending, the kernel's attributes, the stream) and say it.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace moe::gmm::wgmma {

// The runtime calls asked; tests replace them (no GPU needed).
struct FailureQueries {
  cudaError_t (*peek_error)();
  cudaError_t (*clear_error)();
  cudaError_t (*func_attributes)(cudaFuncAttributes* into, const void* func);
  cudaError_t (*stream_state)(void* stream);
};
const FailureQueries& real_failure_queries();

// "<status> (<what the runtime says>)". `stream`: the stream of the failed launch, asked for
// its state; null (the default stream) is asked too unless `launched` is false (initialize).
std::string explain_cutlass_failure(const char* status, const void* kernel, std::size_t smem, void* stream,
                                    bool launched = true, const FailureQueries& q = real_failure_queries());
inline std::string explain_cutlass_failure(const char* status, const void* kernel, std::size_t smem) {
  return explain_cutlass_failure(status, kernel, smem, nullptr, false);
}

}  // namespace moe::gmm::wgmma
