// The 4-bit decode kernel under the SIMT emulator, with split-K's finalize, launched as
// w4_mma::plan launches them on a GPU.
#include <algorithm>

#include "common/emu_backend.hpp"
#include "gmm/emu.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/w4_mma/w4_mma_kernel.cuh"
#include "moe/error.hpp"

namespace moe::gmm::emu {

namespace {

using W4Kernel = void (*)(w4_mma::Args);

struct W4Tile {
  cuda::TileShape shape;
  W4Kernel k[2][2][2];  // [expert function][down][mxfp4]
};

template <int BM, int BN, int BK, int WN, int ST, bool FN>
void set_kernels(W4Kernel (&k)[2][2]) {
  k[0][0] = &emulated::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, true, false, FN>;
  k[0][1] = &emulated::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, true, true, FN>;
  k[1][0] = &emulated::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, false, false, FN>;
  k[1][1] = &emulated::gmm_w4_mma_kernel<BM, BN, BK, WN, ST, false, true, FN>;
}

template <int BM, int BN, int BK, int WN, int ST>
W4Tile w4_tile() {
  W4Tile t{cuda::TileShape{BM, BN, BK, 1, WN, ST}, {}};
  set_kernels<BM, BN, BK, WN, ST, false>(t.k[0]);
  set_kernels<BM, BN, BK, WN, ST, true>(t.k[1]);
  return t;
}

// w4_mma::tiles()'s shapes, in its order (a test keeps them equal).
const std::vector<W4Tile>& w4_tiles() {
  static const std::vector<W4Tile> v = {w4_tile<16, 128, 128, 4, 4>(), w4_tile<16, 128, 64, 4, 4>(),
                                        w4_tile<16, 64, 32, 4, 4>(), w4_tile<32, 128, 64, 4, 4>(),
                                        w4_tile<64, 128, 64, 8, 3>(), w4_tile<128, 128, 64, 8, 3>()};
  return v;
}

}  // namespace

std::vector<cuda::TileShape> emulated_w4_tiles() {
  std::vector<cuda::TileShape> v;
  for (auto& t : w4_tiles()) v.push_back(t.shape);
  return v;
}

void run_w4_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                std::size_t workspace_bytes, long long max_ctas) {
  w4_mma::Args a = w4_mma::plan_args(s, c, need(in, s.act_name()).shape.at(0));
  if (a.b.rows == 0) return;
  w4_mma::bind_tensors(a, s, c, in, out, workspace, workspace_bytes);
  const W4Tile* tile = nullptr;
  for (auto& t : w4_tiles())
    if (t.shape == c.shape) tile = &t;
  if (!tile) throw Error("gmm emu: no emulated 4-bit kernel of this tile shape");
  const long long sms = emu_device_info().sm_count;
  const long long bound = (static_cast<long long>(a.b.rows) + c.shape.bm - 1) / c.shape.bm + a.b.experts;
  const long long grid = std::min(bound * a.b.n_tiles * a.b.split, max_ctas > 0 ? max_ctas : sms);
  const bool fn = !s.plain_expert_fn();
  const W4Kernel k = tile->k[fn ? 1 : 0][s.down ? 1 : 0][s.wq == WeightFormat::mxfp4 ? 1 : 0];
  run_schedule(a.b, c.shape.bm, in);
  const bool fold = cuda::bind_fold(a.b, s, c, in, out);
  if (a.b.fn.pad_rows) run_pad_rows(a.b, sms);
  emu_launch("gmm_w4_mma_kernel", grid, c.shape.threads(), w4_mma::smem_bytes(c.shape), [&] {
    simt::ptx::cp_async_reset();
    k(a);
  });
  const std::string broken = cuda::map_status_error(a.b.tile_map, a.b.map_tiles);
  if (!broken.empty()) throw Error(broken);
  if (c.split > 1 && !fold) {
    const long long pairs = static_cast<long long>(a.b.rows) * (a.b.n_out / 2);
    const auto fin = fn ? (s.down ? &emulated::gmm_finalize_kernel<false, true, true> : &emulated::gmm_finalize_kernel<true, true, true>)
                        : (s.down ? &emulated::gmm_finalize_kernel<false, true> : &emulated::gmm_finalize_kernel<true, true>);
    emu_launch("gmm_finalize_kernel", std::min((pairs + 255) / 256, 8 * sms), 256, 0, [&] { fin(a.b); }, 11);
  }
}

}  // namespace moe::gmm::emu
