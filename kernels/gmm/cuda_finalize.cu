// Launches the split-K finalize pass (gmm_finalize_kernel in cuda_kernel.cuh).
#include "gmm/cuda_launch.cuh"

namespace moe::gmm::cuda {

namespace {

template <bool UP, bool BF16>
void launch(const KernelArgs& a, void* stream) {
  const long long pairs = static_cast<long long>(a.rows) * (a.n_out / 2);
  if (pairs == 0) return;
  const long long blocks = std::min<long long>((pairs + 255) / 256, 8ll * std::max(a.sm_count, 1));
  gmm_finalize_kernel<UP, BF16><<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(a);
  cuda_check(cudaGetLastError(), "gmm split-K finalize launch");
}

}  // namespace

void launch_finalize(const KernelArgs& a, bool down, DType t, void* stream) {
  const bool bf16 = t == DType::bf16;
  if (!down) bf16 ? launch<true, true>(a, stream) : launch<true, false>(a, stream);
  else bf16 ? launch<false, true>(a, stream) : launch<false, false>(a, stream);
}

}  // namespace moe::gmm::cuda
