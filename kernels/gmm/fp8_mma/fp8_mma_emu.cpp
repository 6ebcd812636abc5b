// The fp8 decode kernel under the SIMT emulator, with the second pass its config needs (split-K's
// finalize for down, the silu*up+quant pass for an unfused up), launched as fp8_mma::plan
// launches them on a GPU.
#include "emu/simt_cuda.hpp"  // first: the silu+quant kernel compiles against its CUDA names

#include <algorithm>

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/fp8_mma/fp8_mma_kernel.cuh"
#include "gmm/fp8_silu_quant_kernels.cuh"
#include "moe/error.hpp"

namespace moe::gmm::emu {

namespace {

using Fp8Kernel = void (*)(fp8_mma::Args);

struct Fp8Tile {
  cuda::TileShape shape;
  Fp8Kernel up, down;
};

template <int BM, int BN, int WN, int ST>
Fp8Tile fp8_tile() {
  return {cuda::TileShape{BM, BN, fp8_mma::kBlockK, 1, WN, ST}, &emulated::gmm_fp8_mma_kernel<BM, BN, WN, ST, true>,
          &emulated::gmm_fp8_mma_kernel<BM, BN, WN, ST, false>};
}

// fp8_mma::tiles()'s shapes, in its order (a test keeps them equal).
const std::vector<Fp8Tile>& fp8_tiles() {
  static const std::vector<Fp8Tile> v = {fp8_tile<16, 128, 4, 4>(), fp8_tile<16, 256, 8, 3>(), fp8_tile<32, 128, 4, 4>(),
                                         fp8_tile<32, 256, 8, 3>()};
  return v;
}

}  // namespace

std::vector<cuda::TileShape> emulated_fp8_tiles() {
  std::vector<cuda::TileShape> v;
  for (auto& t : fp8_tiles()) v.push_back(t.shape);
  return v;
}

void run_fp8_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                 std::size_t workspace_bytes, long long max_ctas) {
  fp8_mma::Args a = fp8_mma::plan_args(s, c, need(in, s.act_name()).shape.at(0));
  if (a.b.rows == 0) return;
  fp8_mma::bind_tensors(a, s, c, in, out, workspace, workspace_bytes);
  const Fp8Tile* tile = nullptr;
  for (auto& t : fp8_tiles())
    if (t.shape == c.shape) tile = &t;
  if (!tile) throw Error("gmm emu: no emulated fp8 kernel of this tile shape");
  const long long sms = emu_device_info().sm_count;
  const long long bound = (static_cast<long long>(a.b.rows) + c.shape.bm - 1) / c.shape.bm + a.b.experts;
  const long long grid = std::min(bound * a.b.n_tiles * a.b.split, max_ctas > 0 ? max_ctas : sms);
  const Fp8Kernel k = s.down ? tile->down : tile->up;
  run_schedule(a.b, c.shape.bm, in);
  const bool fold = cuda::bind_fold(a.b, s, c, in, out);
  emu_launch("gmm_fp8_mma_kernel", grid, c.shape.threads(), fp8_mma::smem_bytes(c.shape), [&] {
    simt::ptx::cp_async_reset();
    k(a);
  });
  const std::string broken = cuda::map_status_error(a.b.tile_map, a.b.map_tiles);
  if (!broken.empty()) throw Error(broken);
  if (s.down && c.split > 1 && !fold) {
    const long long pairs = static_cast<long long>(a.b.rows) * (a.b.n_out / 2);
    emu_launch("gmm_finalize_kernel", std::min((pairs + 255) / 256, 8 * sms), 256, 0,
               [&] { emulated::gmm_finalize_kernel<false, true>(a.b); }, 11);
  }
  if (!s.down && !fp8_mma::fused_up(c.shape)) {
    constexpr int kThreads = 256;  // as fp8_mma_tiles.cu launches it
    const fp8_kernels::SiluQuantArgs q{a.b.partial, a.h, a.h_scale, a.b.rows, a.b.n_out, a.b.offsets + a.b.experts, a.ue8m0,
                                       a.b.split, static_cast<long long>(a.b.rows) * a.b.n_w};
    emu_launch("silu_quant_kernel", fp8_kernels::silu_quant_blocks(a.b.rows, a.b.n_out, kThreads), kThreads, 0, [&] {
      if (a.b.split > 1) fp8_kernels::silu_quant_kernel<kThreads, true>(q);
      else fp8_kernels::silu_quant_kernel<kThreads>(q);
    }, 5);
  }
}

}  // namespace moe::gmm::emu
