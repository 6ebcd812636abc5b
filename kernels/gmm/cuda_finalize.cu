// Plans the split-K finalize pass (gmm_finalize_kernel in cuda_kernel.cuh).
#include "gmm/cuda_launch.cuh"

namespace moe::gmm::cuda {

namespace {

template <bool UP, bool BF16>
PlannedLaunch plan(const KernelArgs& a) {
  const long long pairs = static_cast<long long>(a.rows) * (a.n_out / 2);
  PlannedLaunch p;
  p.func = reinterpret_cast<const void*>(&gmm_finalize_kernel<UP, BF16>);
  p.grid = static_cast<unsigned>(std::min<long long>((pairs + 255) / 256, 8ll * std::max(a.sm_count, 1)));
  p.threads = 256;
  return p;
}

}  // namespace

PlannedLaunch plan_finalize(const KernelArgs& a, bool down, DType t) {
  const bool bf16 = t == DType::bf16;
  if (!down) return bf16 ? plan<true, true>(a) : plan<true, false>(a);
  return bf16 ? plan<false, true>(a) : plan<false, false>(a);
}

}  // namespace moe::gmm::cuda
