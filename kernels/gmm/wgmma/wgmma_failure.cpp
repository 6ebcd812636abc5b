#include "gmm/wgmma/wgmma_failure.hpp"

namespace moe::gmm::wgmma {

const FailureQueries& real_failure_queries() {
  static const FailureQueries q{
      [] { return cudaPeekAtLastError(); },
      [] { return cudaGetLastError(); },
      [](cudaFuncAttributes* a, const void* f) { return cudaFuncGetAttributes(a, f); },
      [](void* s) { return cudaStreamQuery(static_cast<cudaStream_t>(s)); },
  };
  return q;
}

std::string explain_cutlass_failure(const char* status, const void* kernel, std::size_t smem, void* stream,
                                    bool launched, const FailureQueries& q) {
  std::string why = status;
  cudaError_t e = q.peek_error();
  if (e != cudaSuccess) return why + " (" + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
  cudaFuncAttributes a{};
  e = q.func_attributes(&a, kernel);
  if (e != cudaSuccess) {
    q.clear_error();  // this query's own error: the caller's context must not inherit it
    return why + " (cudaFuncGetAttributes: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
  }
  if (a.maxDynamicSharedSizeBytes < static_cast<int>(smem))
    why += " (the kernel may use " + std::to_string(a.maxDynamicSharedSizeBytes) + " bytes of shared memory, needs " +
           std::to_string(smem) + ")";
  if (launched) {
    e = q.stream_state(stream);
    if (e != cudaSuccess && e != cudaErrorNotReady) why += std::string(" (the stream reports ") + cudaGetErrorName(e) + ")";
  }
  return why;
}

}  // namespace moe::gmm::wgmma
