// The gmm kernels' emulated instantiation: every tile shape of cuda_tiles_*.cu and the wgmma
// path's setup and silu kernels, built as host code over emu_primitives.hpp in this one unit.
#include "gmm/emu.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common/e4m3.hpp"
#include "common/emu_backend.hpp"
#include "gmm/detail.hpp"
#include "gmm/emu_primitives.hpp"
#include "gmm/family.hpp"
#include "moe/dtype.hpp"
#include "moe/error.hpp"

namespace moe::gmm::emu {

namespace {

using Kernel = void (*)(cuda::KernelArgs);  // kernels take their arguments by value

struct Tile {
  cuda::TileShape shape;
  Kernel up_bf16, down_bf16, up_f16, down_f16;
  Kernel fn[2][2] = {};  // the expert-function kernels [down][bf16], for cuda_tiles_fn.cu's shapes
  Kernel get(bool down, bool bf16) const { return bf16 ? (down ? down_bf16 : up_bf16) : (down ? down_f16 : up_f16); }
  Kernel get_fn(bool down, bool bf16) const { return fn[down ? 1 : 0][bf16 ? 1 : 0]; }
};

template <int BM, int BN, int BK, int WM, int WN, int ST, bool FN = false>
Tile tile() {
  Tile t{cuda::TileShape{BM, BN, BK, WM, WN, ST}, &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, true>,
         &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, true>,
         &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, false>,
         &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, false>};
  if constexpr (FN) {
    t.fn[0][0] = &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, false, true>;
    t.fn[0][1] = &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, true, true>;
    t.fn[1][0] = &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, false, true>;
    t.fn[1][1] = &emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, true, true>;
  }
  return t;
}

// The shapes cuda_tiles_*.cu instantiate, in the same order (true: cuda_tiles_fn.cu's too).
const std::vector<Tile>& tiles() {
  static const std::vector<Tile> v = {
      tile<16, 64, 64, 1, 4, 4, true>(), tile<16, 128, 64, 1, 4, 4>(),  tile<16, 128, 64, 1, 4, 3>(),
      tile<16, 64, 32, 1, 4, 4>(),   tile<16, 32, 32, 1, 2, 4>(),   tile<32, 64, 64, 1, 4, 4>(),   tile<32, 128, 64, 1, 4, 4, true>(),
      tile<32, 128, 64, 2, 2, 3>(),  tile<64, 64, 64, 2, 2, 4>(),   tile<64, 128, 64, 2, 2, 3, true>(),
      tile<64, 128, 32, 2, 2, 4>(),  tile<64, 128, 64, 2, 4, 3>(),  tile<128, 64, 64, 2, 2, 4>(),
      tile<128, 128, 32, 2, 2, 4>(), tile<128, 128, 64, 2, 2, 3, true>(), tile<128, 128, 64, 2, 4, 3>(),
      tile<128, 128, 32, 2, 4, 4>(), tile<128, 256, 32, 2, 4, 3>(),
  };
  return v;
}

const Tile& find(const cuda::TileShape& t) {
  for (auto& e : tiles())
    if (e.shape == t) return e;
  throw Error("gmm emu: no emulated kernel of this tile shape");
}

// What CUTLASS does with the arrays the setup kernel wrote: D[e] = A[e] * B[e]^T, row m scaled
// by its routed weight when the plan has them, fp32 accumulation, rounded once to the dtype.
// Swapped: D is column-major (element m, n at n * ldd + m) and the routed weight is column n's.
void grouped_gemm_on_host(const wgmma::GroupArrays& g, int experts, bool bf16, bool row_weight, bool swap) {
  auto f32 = [bf16](std::uint16_t v) { return bf16 ? bf16_to_float(v) : f16_to_float(v); };
  for (int e = 0; e < experts; ++e) {
    const int M = g.problems[3 * e], N = g.problems[3 * e + 1], K = g.problems[3 * e + 2];
    const auto* A = static_cast<const std::uint16_t*>(g.a[e]);
    const auto* B = static_cast<const std::uint16_t*>(g.b[e]);
    auto* D = static_cast<std::uint16_t*>(g.d[e]);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += f32(A[m * g.lda[e] + k]) * f32(B[n * g.ldb[e] + k]);
        if (row_weight) acc *= g.row_weight[e][swap ? n : m];
        D[swap ? n * g.ldd[e] + m : m * g.ldd[e] + n] = bf16 ? float_to_bf16(acc) : float_to_f16(acc);
      }
  }
}

// The fp8 blockwise-scaled GEMM as CUTLASS runs it from the setup kernel's arrays: for each
// 128-wide K block, the code products summed in fp32 and promoted with the row's activation
// scale times the block's weight scale, both found through the per-expert scale layouts; the
// routed weight in the epilogue; fp32 out (up) or rounded once to bf16 (down). Swapped: A is
// the weights (a scale per 128 of its rows), B the tokens (one each), D^T column-major and the
// routed weight per column. A layout that does not cover the expert's operands is an error.
void grouped_gemm_fp8_on_host(const wgmma::GroupArrays& g, int experts, bool row_weight, bool bf16_out, bool swap) {
  constexpr int L = wgmma::kScaleLayoutInts;
  const int rows_per_scale_a = swap ? 128 : 1, rows_per_scale_b = swap ? 1 : 128;
  for (int e = 0; e < experts; ++e) {
    const int M = g.problems[3 * e], N = g.problems[3 * e + 1], K = g.problems[3 * e + 2];
    const auto* A = static_cast<const std::uint8_t*>(g.a[e]);
    const auto* B = static_cast<const std::uint8_t*>(g.b[e]);
    auto* D = static_cast<float*>(g.d[e]);
    auto* D16 = static_cast<std::uint16_t*>(g.d[e]);
    // Layout ints: (mn, kb, 1, stride of mn, size); K is the unit-stride mode.
    const int* la = g.layout_sfa + L * e;
    const int* lb = g.layout_sfb + L * e;
    const int kb = (K + 127) / 128;
    auto covers = [kb](const int* l, int mn) { return l[0] >= mn && l[1] == kb && l[2] == 1 && l[3] == kb && l[4] == l[0] * kb; };
    if (M > 0 && N > 0 &&
        (!covers(la, (M + rows_per_scale_a - 1) / rows_per_scale_a) || !covers(lb, (N + rows_per_scale_b - 1) / rows_per_scale_b)))
      throw Error("gmm emu: expert " + std::to_string(e) + "'s scale layouts do not cover its " + std::to_string(M) + "x" +
                  std::to_string(N) + "x" + std::to_string(K) + " problem (the setup kernel wrote them wrong)");
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float acc = 0;
        for (int k0 = 0; k0 < K; k0 += 128) {
          float block = 0;
          for (int k = k0; k < k0 + 128 && k < K; ++k)
            block += fp8::to_float(A[m * g.lda[e] + k]) * fp8::to_float(B[n * g.ldb[e] + k]);
          acc += block * g.sfa[e][(m / rows_per_scale_a) * la[3] + k0 / 128] *
                 g.sfb[e][(n / rows_per_scale_b) * lb[3] + k0 / 128];
        }
        if (row_weight) acc *= g.row_weight[e][swap ? n : m];
        const long long at = swap ? static_cast<long long>(n) * g.ldd[e] + m : static_cast<long long>(m) * g.ldd[e] + n;
        if (bf16_out) D16[at] = float_to_bf16(acc);
        else D[at] = acc;
      }
  }
}

}  // namespace

std::vector<cuda::TileShape> emulated_tiles() {
  std::vector<cuda::TileShape> v;
  for (auto& t : tiles()) v.push_back(t.shape);
  return v;
}

void run_schedule(cuda::KernelArgs& a, int bm, const RefMap& in) {
  if (cuda::bind_given_tile_map(in, a, bm)) return;
  const Kernel schedule = bm == 16   ? &emulated::gmm_schedule_kernel<16>
                          : bm == 32 ? &emulated::gmm_schedule_kernel<32>
                          : bm == 64 ? &emulated::gmm_schedule_kernel<64>
                                     : &emulated::gmm_schedule_kernel<128>;
  emu_launch("gmm_schedule_kernel", 1, cuda::kScheduleThreads, cuda::schedule_smem_bytes(a.experts), [&] { schedule(a); });
}

void run_pad_rows(const cuda::KernelArgs& a, long long sms) {
  const PadRowsArgs pa{a.act, const_cast<std::uint8_t*>(a.fn.pad_rows), a.rows, a.k_dim};
  emu_launch("gmm_pad_rows_kernel", pad_rows_blocks(a.rows, 8 * sms), kPadRowsWarps * 32, 0,
             [&] { emulated::gmm_pad_rows_kernel<kPadRowsWarps>(pa); });
}

void run_mma(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
             std::size_t workspace_bytes, long long max_ctas) {
  cuda::KernelArgs a = cuda::plan_args(s, c, need(in, s.act_name()).shape.at(0));
  if (a.rows == 0) return;
  cuda::bind_tensors(a, s, c, in, out, workspace, workspace_bytes);
  const bool bf16 = s.dtype == DType::bf16, fn = !s.plain_expert_fn();
  const Kernel k = fn ? find(c.shape).get_fn(s.down, bf16) : find(c.shape).get(s.down, bf16);
  if (!k) throw Error("gmm emu: no emulated expert-function kernel of this tile shape");
  // As cuda_launch.cuh sizes the persistent grid, with one resident CTA per SM.
  const long long sms = emu_device_info().sm_count;
  const long long bound = (static_cast<long long>(a.rows) + c.shape.bm - 1) / c.shape.bm + a.experts;
  const long long grid = std::min(bound * a.n_tiles * a.split, max_ctas > 0 ? max_ctas : sms);
  run_schedule(a, c.shape.bm, in);
  const bool fold = cuda::bind_fold(a, s, c, in, out);
  if (a.fn.pad_rows) run_pad_rows(a, sms);
  emu_launch("gmm_mma_kernel", grid, c.shape.threads(), cuda::smem_bytes(c.shape, a.experts), [&] {
    simt::ptx::cp_async_reset();
    k(a);
  });
  // The device leaves its verdict on the offsets in the workspace; the host reads it here.
  const std::string broken = cuda::map_status_error(a.tile_map, a.map_tiles);
  if (!broken.empty()) throw Error(broken);
  if (c.split == 1 || fold) return;  // a fold summed the splits itself
  const Kernel fin =
      fn ? (s.down ? (bf16 ? &emulated::gmm_finalize_kernel<false, true, true> : &emulated::gmm_finalize_kernel<false, false, true>)
                   : (bf16 ? &emulated::gmm_finalize_kernel<true, true, true> : &emulated::gmm_finalize_kernel<true, false, true>))
         : (s.down ? (bf16 ? &emulated::gmm_finalize_kernel<false, true> : &emulated::gmm_finalize_kernel<false, false>)
                   : (bf16 ? &emulated::gmm_finalize_kernel<true, true> : &emulated::gmm_finalize_kernel<true, false>));
  const long long pairs = static_cast<long long>(a.rows) * (a.n_out / 2);
  emu_launch("gmm_finalize_kernel", std::min((pairs + 255) / 256, 8 * sms), 256, 0, [&] { fin(a); }, 11);
}

void run_wgmma(const GmmSpec& s, const RefMap& in, const RefMap& out, long long grid, bool swap) {
  const TensorRef& act = need(in, s.act_name());
  const auto R = act.shape.at(0);
  const bool bf16 = s.dtype == DType::bf16;
  const auto E = static_cast<std::size_t>(s.e_local());
  // The per-expert arrays and, for up, the gate|up rows: workspace on a GPU, poisoned here.
  std::vector<int> problems(3 * E, -7);
  std::vector<const void*> pa(E, nullptr), pb(E, nullptr);
  std::vector<void*> pd(E, nullptr);
  std::vector<const float*> prw(E, nullptr);
  std::vector<long long> lda(E, -1), ldb(E, -1), ldd(E, -1);
  std::vector<std::uint16_t> gu(s.down || s.fp8 ? 0 : static_cast<std::size_t>(R * s.n_w()), 0x7FC1);
  // fp8 up: the GEMM's fp32 rows (NaN-poisoned); fp8: the scale pointers and layouts.
  std::vector<float> gemm32(s.fp8 && !s.down ? static_cast<std::size_t>(R * s.n_w()) : 0, std::nanf(""));
  std::vector<const float*> psfa(E, nullptr), psfb(E, nullptr);
  std::vector<int> lsfa(s.fp8 ? E * wgmma::kScaleLayoutInts : 0, -7), lsfb(lsfa);
  wgmma::SetupArgs a;
  a.act = act.as<const std::uint16_t>();
  a.weight = need(in, s.weight_name()).as<const std::uint16_t>();
  a.offsets = need(in, "offsets").as<const std::int32_t>();
  a.row_weight = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  std::uint16_t* dst = need(out, s.out_name()).as<std::uint16_t>();
  a.out = s.down ? dst : gu.data();
  a.rows = static_cast<int>(R);
  a.n = static_cast<int>(s.n_w());
  a.k = static_cast<int>(s.k_dim());
  a.experts = static_cast<int>(E);
  a.swap = swap;
  a.g = {problems.data(), pa.data(), pb.data(), pd.data(), prw.data(), lda.data(), ldb.data(), ldd.data()};
  if (s.fp8) {
    a.in_bytes = 1;
    a.out_bytes = s.down ? 2 : sizeof(float);
    if (!s.down) a.out = reinterpret_cast<std::uint16_t*>(gemm32.data());
    a.act_scale = need(in, s.act_scale_name()).as<const float>();
    a.weight_scale = need(in, s.weight_scale_name()).as<const float>();
    a.g.sfa = psfa.data();
    a.g.sfb = psfb.data();
    a.g.layout_sfa = lsfa.data();
    a.g.layout_sfb = lsfb.data();
  }
  auto blocks = [grid](long long items) { return grid > 0 ? grid : static_cast<long long>(wgmma::blocks_for(items)); };
  if (E == 0) return;
  emu_launch("wgmma_setup_kernel", blocks(a.experts), emulated::kWgmmaThreads, 0, [&] { emulated::wgmma_setup_kernel(a); }, 3);
  emu_note_launch("CUTLASS grouped GEMM (played on the host)");
  if (s.fp8) {
    grouped_gemm_fp8_on_host(a.g, a.experts, s.routed_weight, s.down, swap);
    if (s.down) return;
    wgmma::SiluQuantLaunch q;
    q.gu = gemm32.data();
    q.offsets = a.offsets;
    q.h = need(out, "h").as<std::uint8_t>();
    q.h_scale = need(out, "h_scale").as<float>();
    q.rows = a.rows;
    q.inter = static_cast<int>(s.intermediate);
    q.experts = a.experts;
    q.ue8m0 = s.ue8m0;
    return run_silu_quant(q);
  }
  grouped_gemm_on_host(a.g, a.experts, bf16, s.routed_weight, swap);
  if (s.down) return;
  const wgmma::SiluArgs si{gu.data(), a.offsets, dst, a.rows, static_cast<int>(s.intermediate), a.experts};
  emu_launch("wgmma_silu_kernel", blocks(static_cast<long long>(a.rows) * (si.inter / 8)), emulated::kWgmmaThreads, 0,
             [&] { bf16 ? emulated::wgmma_silu_kernel<true>(si) : emulated::wgmma_silu_kernel<false>(si); }, 5);
}

std::string not_emulated(const Params& config) {
  if (!wgmma::selected(config)) return {};
  return "the grouped GEMM is CUTLASS's wgmma + TMA kernel, which the emulator cannot run; its setup and "
         "silu*up kernels ran emulated around a host GEMM and were checked";
}

}  // namespace moe::gmm::emu

namespace moe::gmm {

// Measured on a development machine (one core): see --help and docs/commands/run.md.
constexpr EmuSpeed kSpeed{0, 4e6};

BackendImpl emu_backend() {
  return emu_backend_over(
      cuda_backend(), kSpeed,
      [](const Params& problem, const Params& config, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
        const GmmSpec s = GmmSpec::parse(problem);
        if (s.w4()) {
          require_w4_kernel(s, config);
          check_host_offsets(need(in, "offsets").as<const std::int32_t>(), s.e_local() + 1, need(in, s.act_name()).shape.at(0));
          return emu::run_w4_mma(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes);
        }
        if (std::string why = expert_fn_kernel_invalid(s, config); !why.empty()) throw Error("gmm: " + why);
        check_host_offsets(need(in, "offsets").as<const std::int32_t>(), s.e_local() + 1, need(in, s.act_name()).shape.at(0));
        if (wgmma::selected(config)) return emu::run_wgmma(s, in, out, 0, wgmma::parse_config(config).shape.swapped());
        if (s.fp8) return emu::run_fp8_mma(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes);
        emu::run_mma(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes);
      },
      [](const Params&, const Params& config) { return emu::not_emulated(config); });
}

}  // namespace moe::gmm
