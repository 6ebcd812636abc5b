// Plans the split-K finalize pass (gmm_finalize_kernel in cuda_kernel.cuh), the schedule
// kernel that writes the tile map (cuda_tile_map.cuh) and the pad-row pass ahead of a biased
// stage (expert_fn.cuh).
#include "gmm/mma/cuda_launch.cuh"

namespace moe::gmm::cuda {

namespace {

// Both passes take the gmm's KernelArgs whichever main kernel they serve (the fp8 one has
// arguments of its own): their plans launch themselves.
void launch_with_args(const PlannedLaunch& p, const KernelArgs& a, void* stream) {
  KernelArgs by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

template <bool UP, bool BF16, bool FN>
PlannedLaunch plan(const KernelArgs& a) {
  const long long pairs = static_cast<long long>(a.rows) * (a.n_out / 2);
  PlannedLaunch p;
  p.func = reinterpret_cast<const void*>(&gmm_finalize_kernel<UP, BF16, FN>);
  p.launch = &launch_with_args;
  p.finalize = true;
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
  p.schedule = true;
  if (p.smem > 48 * 1024) throw Error("gmm: the tile map's schedule kernel needs " + std::to_string(p.smem) +
                                      " bytes of shared memory for " + std::to_string(a.experts) + " experts");
  return p;
}

// The pad-row pass over the call's activations, into the flags bind_tensors placed in the
// workspace (only the kernels after it read them, as const).
void launch_pad_pass(const PlannedLaunch& p, const KernelArgs& a, void* stream) {
  PadRowsArgs by_value{a.act, const_cast<std::uint8_t*>(a.fn.pad_rows), a.rows, a.k_dim};
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

}  // namespace

PlannedLaunch plan_pad_rows(const KernelArgs& a) {
  PlannedLaunch p;
  p.func = reinterpret_cast<const void*>(&gmm_pad_rows_kernel<kPadRowsWarps>);
  p.launch = &launch_pad_pass;
  p.grid = static_cast<unsigned>(pad_rows_blocks(a.rows, 8ll * std::max(a.sm_count, 1)));
  p.threads = kPadRowsWarps * 32;
  return p;
}

PlannedLaunch plan_schedule(const KernelArgs& a, int bm) {
  switch (bm) {
    case 16: return plan_map<16>(a);
    case 32: return plan_map<32>(a);
    case 64: return plan_map<64>(a);
    case 128: return plan_map<128>(a);
    default: throw Error("gmm: no schedule kernel for block_m=" + std::to_string(bm));
  }
}

PlannedLaunch plan_finalize(const KernelArgs& a, bool down, DType t, bool expert_fn) {
  const bool bf16 = t == DType::bf16;
  if (expert_fn) {
    if (!down) return bf16 ? plan<true, true, true>(a) : plan<true, false, true>(a);
    return bf16 ? plan<false, true, true>(a) : plan<false, false, true>(a);
  }
  if (!down) return bf16 ? plan<true, true, false>(a) : plan<true, false, false>(a);
  return bf16 ? plan<false, true, false>(a) : plan<false, false, false>(a);
}

}  // namespace moe::gmm::cuda
