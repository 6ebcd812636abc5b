// The combine kernel's emulated instantiation: cuda_kernel.cuh built as host code and launched
// by the cuda backend's own host half (run_combine), one CTA per tokens_per_cta tokens as
// cuda_launch.cuh launches it.
#include "emu/simt_cuda.hpp"  // first: the kernel header compiles against its CUDA names

#include "combine/backends.hpp"
#include "combine/cuda_kernel.cuh"
#include "combine/cuda_launch.hpp"
#include "common/emu_backend.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

namespace cd = combine_cuda::detail;

template <class Tin, class Tout, bool RMS>
void launch(const combine_cuda::Args& a, const combine_cuda::Config& c) {
  const cd::Kernel k = cd::find_kernel<Tin, Tout, RMS>(c);
  if (!k) throw Error("combine emu: no kernel instantiated for this config");
  if (a.T <= 0) return;
  const cd::Dev d{a.y, a.dst, a.w, a.residual, a.gamma, a.out, a.residual_out, a.T, a.D, a.rows, a.K, a.eps};
  emu_launch("combine_kernel", (a.T + c.tokens_per_cta - 1) / c.tokens_per_cta, c.threads, 0,
             [&] { k(d, c.tokens_per_cta); });
}

template <class Tin, class Tout>
void by_epilogue(const combine_cuda::Args& a, bool rmsnorm, const combine_cuda::Config& c) {
  rmsnorm ? launch<Tin, Tout, true>(a, c) : launch<Tin, Tout, false>(a, c);
}

void emu_bf16(const combine_cuda::Args& a, bool out_f32, bool rmsnorm, const combine_cuda::Config& c, void*) {
  out_f32 ? by_epilogue<__nv_bfloat16, float>(a, rmsnorm, c) : by_epilogue<__nv_bfloat16, __nv_bfloat16>(a, rmsnorm, c);
}
void emu_f16(const combine_cuda::Args& a, bool out_f32, bool rmsnorm, const combine_cuda::Config& c, void*) {
  out_f32 ? by_epilogue<__half, float>(a, rmsnorm, c) : by_epilogue<__half, __half>(a, rmsnorm, c);
}
void emu_f32(const combine_cuda::Args& a, bool rmsnorm, const combine_cuda::Config& c, void*) {
  by_epilogue<float, float>(a, rmsnorm, c);
}

}  // namespace

// Measured on a development machine (one core): see --help and docs/commands/run.md.
constexpr EmuSpeed kSpeed{1.5e6, 0};

BackendImpl combine_emu_backend() {
  return emu_backend_over(combine_cuda_backend(), kSpeed, [](const Params& problem, const Params& config, const RefMap& in,
                                                     const RefMap& out, const LaunchContext& ctx) {
    run_combine(combine_cuda::Launchers{&emu_bf16, &emu_f16, &emu_f32}, problem, config, in, out, ctx);
  });
}

}  // namespace moe
