// The dispatch kernels' emulated instantiation: the aligners and gathers of
// cuda_align_kernels.cuh and cuda_gather_kernels.cuh built as host code and launched by the
// cuda backend's own host half (run_dispatch), with the grids cuda_align.cu and cuda_gather.cu use.
#include "emu/simt_cuda.hpp"  // first: the kernel headers compile against its CUDA names

#include <string>

#include "common/emu_backend.hpp"
#include "dispatch/backends.hpp"
#include "dispatch/cuda_align_kernels.cuh"
#include "dispatch/cuda_gather_fp8_kernels.cuh"
#include "dispatch/cuda_gather_kernels.cuh"
#include "dispatch/cuda_launch.hpp"
#include "moe/error.hpp"

namespace moe {

namespace {

using namespace dispatch_cuda;
namespace ak = dispatch_cuda::align_kernels;
namespace gk = dispatch_cuda::gather_kernels;

ak::Dev to_dev(const AlignArgs& a) {
  return ak::Dev{a.ids, a.slots, a.e0, a.local, a.E_total, a.A, a.offsets, a.src, a.dst, a.rows};
}

template <int TH>
void single(const ak::Dev& d) {
  emu_launch("align_single_kernel", 1, TH, single_smem_bytes(TH, d.local, d.slots), [&] { ak::align_single_kernel<TH>(d); });
}

void emu_align_single(const AlignArgs& a, int threads, void*) {
  const ak::Dev d = to_dev(a);
  if (threads == 512) single<512>(d);
  else if (threads == 1024) single<1024>(d);
  else throw Error("dispatch emu: no single-CTA aligner of " + std::to_string(threads) + " threads");
}

template <int TH>
void multi(const ak::Dev& d, int chunk, int* hist, int n) {
  if (n) emu_launch("align_hist_kernel", n, TH, hist_smem_bytes(d.local, chunk), [&] { ak::align_hist_kernel<TH>(d, chunk, hist, n); });
  emu_launch("align_scan_kernel", 1, kScanThreads, scan_smem_bytes(d.local), [&] { ak::align_scan_kernel<>(d, hist, n); });
  if (n)
    emu_launch("align_scatter_kernel", n, TH, scatter_smem_bytes(TH, d.local, chunk),
               [&] { ak::align_scatter_kernel<TH>(d, chunk, hist, n); });
}

void emu_align_multi(const AlignArgs& a, int threads, int chunk, void* workspace, std::size_t bytes, void*) {
  const int n = static_cast<int>((a.slots + chunk - 1) / chunk);
  if (bytes < multi_workspace_bytes(a.slots, a.local, chunk)) throw Error("dispatch emu: workspace too small");
  const ak::Dev d = to_dev(a);
  auto* hist = static_cast<int*>(workspace);
  if (threads == 128) multi<128>(d, chunk, hist, n);
  else if (threads == 256) multi<256>(d, chunk, hist, n);
  else throw Error("dispatch emu: no multi-CTA aligner of " + std::to_string(threads) + " threads");
}

void emu_gather(const GatherArgs& a, const ScatterArgs& by_token, int order, int threads, int per, int vec, int unroll,
                void*) {
  if (a.rows <= 0) return;
  const gk::Dev d{static_cast<const char*>(a.x), a.src, static_cast<char*>(a.x_sorted), a.rows, a.slots, a.K,
                  a.row_bytes, a.used_rows};
  if (order == 0) {
    const auto k = gk::find_kernel<false>(threads, vec, unroll);
    if (!k) throw Error("dispatch emu: no row gather for this config");
    emu_launch("gather (row order)", (a.rows + per - 1) / per, threads, 0, [&] { k(d, per); });
    return;
  }
  const auto k = gk::find_kernel<true>(threads, vec, unroll);
  if (!k) throw Error("dispatch emu: no token gather for this config");
  const long long token_blocks = (by_token.T + per - 1) / per;
  const gk::Tok tok{by_token.dst, by_token.T, token_blocks};
  emu_launch("gather (token order)", token_blocks + (a.rows + gk::kPadRowsPerBlock - 1) / gk::kPadRowsPerBlock, threads,
             0, [&] { k(d, tok, per); });
}

void emu_gather_fp8(const GatherArgs& a, int threads, void*) {
  if (a.rows <= 0) return;
  namespace qk = gather_fp8_kernels;
  const long long D = a.row_bytes / 2;
  const qk::QDev d{static_cast<const std::uint16_t*>(a.x), a.src, static_cast<std::uint8_t*>(a.x_sorted), a.x_scale,
                   a.rows, a.slots, a.K, D, a.used_rows, a.ue8m0};
  auto run = [&](auto kernel) { emu_launch("quant_gather_kernel", qk::quant_gather_blocks(a.rows, D, threads), threads, 0, [&] { kernel(d); }); };
  if (threads == 128) run(&qk::quant_gather_kernel<128>);
  else if (threads == 256) run(&qk::quant_gather_kernel<256>);
  else if (threads == 512) run(&qk::quant_gather_kernel<512>);
  else throw Error("dispatch emu: no fp8 gather of " + std::to_string(threads) + " threads");
}

}  // namespace

// Measured on a development machine (one core): see --help and docs/commands/run.md.
constexpr EmuSpeed kSpeed{2e6, 0};

BackendImpl dispatch_emu_backend() {
  return emu_backend_over(dispatch_cuda_backend(), kSpeed, [](const Params& problem, const Params& config, const RefMap& in,
                                                      const RefMap& out, const LaunchContext& ctx) {
    run_dispatch(Launchers{&emu_align_single, &emu_align_multi, &emu_gather, &emu_gather_fp8}, problem, config, in, out, ctx);
  });
}

}  // namespace moe
