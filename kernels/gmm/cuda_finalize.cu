// Split-K's second pass: the partial sums of every split, added in split order (the result
// does not depend on which CTA finished first), then the epilogue the main kernel skipped.
#include "gmm/cuda_kernel.cuh"

namespace moe::gmm::cuda {

namespace {

template <bool UP, bool BF16>
__global__ void __launch_bounds__(256) gmm_finalize_kernel(const KernelArgs p) {
  const int half = p.n_out / 2;
  const long long total = static_cast<long long>(p.rows) * half;
  for (long long idx = blockIdx.x * 256ll + threadIdx.x; idx < total; idx += static_cast<long long>(gridDim.x) * 256) {
    const int r = static_cast<int>(idx / half), c = static_cast<int>(idx % half) * 2;
    float g0 = 0, g1 = 0, u0 = 0, u1 = 0;
    for (int s = 0; s < p.split; ++s) {
      const float* src = p.partial + (static_cast<std::size_t>(s) * p.rows + r) * p.n_w;
      const float2 g = *reinterpret_cast<const float2*>(src + c);
      g0 += g.x;
      g1 += g.y;
      if constexpr (UP) {
        const float2 u = *reinterpret_cast<const float2*>(src + p.n_out + c);
        u0 += u.x;
        u1 += u.y;
      }
    }
    if constexpr (UP) {
      g0 = silu(g0) * u0;
      g1 = silu(g1) * u1;
    } else if (p.row_weight != nullptr) {
      const float w = p.row_weight[r];
      g0 *= w;
      g1 *= w;
    }
    *reinterpret_cast<std::uint32_t*>(p.out + static_cast<std::size_t>(r) * p.n_out + c) = pack2<BF16>(g0, g1);
  }
}

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
