// Plans the split-K finalize pass (gmm_finalize_kernel in cuda_kernel.cuh) and the schedule
// kernel that writes the tile map (cuda_tile_map.cuh).
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

namespace {

// Both passes take the gmm's KernelArgs whichever main kernel they serve (the fp8 one has
// arguments of its own): their plans launch themselves.
void launch_with_args(const PlannedLaunch& p, const KernelArgs& a, void* stream) {
  KernelArgs by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

template <bool UP, bool BF16>
PlannedLaunch plan(const KernelArgs& a) {
  const long long pairs = static_cast<long long>(a.rows) * (a.n_out / 2);
  PlannedLaunch p;
  p.func = reinterpret_cast<const void*>(&gmm_finalize_kernel<UP, BF16>);
  p.launch = &launch_with_args;
  p.grid = static_cast<unsigned>(std::min<long long>((pairs + 255) / 256, 8ll * std::max(a.sm_count, 1)));
  p.threads = 256;
  return p;
}

template <int BM>
PlannedLaunch plan_map(const KernelArgs& a) {
  PlannedLaunch p;
  p.func = reinterpret_cast<const void*>(&gmm_schedule_kernel<BM>);
  p.launch = &launch_with_args;
  p.grid = 1;
  p.threads = kScheduleThreads;
  p.smem = schedule_smem_bytes(a.experts);
  if (p.smem > 48 * 1024) throw Error("gmm: the tile map's schedule kernel needs " + std::to_string(p.smem) +
                                      " bytes of shared memory for " + std::to_string(a.experts) + " experts");
  return p;
}

}  // namespace

PlannedLaunch plan_schedule(const KernelArgs& a, int bm) {
  switch (bm) {
    case 16: return plan_map<16>(a);
    case 32: return plan_map<32>(a);
    case 64: return plan_map<64>(a);
    case 128: return plan_map<128>(a);
    default: throw Error("gmm: no schedule kernel for block_m=" + std::to_string(bm));
  }
}

PlannedLaunch plan_finalize(const KernelArgs& a, bool down, DType t) {
  const bool bf16 = t == DType::bf16;
  if (!down) return bf16 ? plan<true, true>(a) : plan<true, false>(a);
  return bf16 ? plan<false, true>(a) : plan<false, false>(a);
}

}  // namespace moe::gmm::cuda
