#pragma once
// One CUTLASS sm90 ptr-array fp8 grouped GEMM with blockwise scaling (DESIGN.md 1.6):
// acc[e] = sum over 128-wide K blocks of x_scale * w_scale * (A[e] * B[e]^T), e4m3 operands,
// fp32 accumulation and promotion, scales K-major as the rest of moebench keeps them
// (x_scale [R, K/128], w_scale [E, N/128, K/128]). Up's output is fp32: its gate|up rows go to
// the silu*up+requant kernel, whose h_scale must come from unrounded values. Down's (OUT bf16)
// rows are multiplied by the routed weight in fp32 and rounded to bf16 once, in the epilogue.
// SWAP (experts of a few dozen rows): the operands trade places as in wgmma_gemm.cuh, the
// weights along CUTLASS's M and the tokens along its N, and so do the scale granularities: A's
// scales are the weights' 128x128 blocks, B's one per token and 128 K (CUTLASS's mainloop has
// the one-scale-along-M, many-along-N case); D^T column-major is D row-major, the routed weight a
// row broadcast.
// Included by exactly one translation unit per instantiation (wgmma_gemm_fp8_*.cu).
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_compute_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_load_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include <cstring>
#include <string>

#include "gmm/wgmma/wgmma_configs.hpp"
#include "gmm/wgmma/wgmma_plan.cuh"

namespace moe::gmm::wgmma {

template <int BM, int BN, int BK, int CM, int CN, bool PINGPONG, class OUT = float, bool SWAP = false>
struct GroupedGemmFp8 {
  using Tile = cute::Shape<cute::Int<BM>, cute::Int<BN>, cute::Int<BK>>;
  using Cluster = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using Problem = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using MainSchedule = std::conditional_t<PINGPONG, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8Blockwise,
                                          cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8Blockwise>;
  using EpiSchedule = std::conditional_t<PINGPONG, cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong,
                                         cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
  static constexpr int kClusterM = CM, kClusterN = CN;
  static constexpr bool kSwap = SWAP;
  static constexpr int kAlignAB = 16;  // 16 bytes of e4m3: TMA's requirement
  static constexpr int kAlignD = 16 / static_cast<int>(sizeof(OUT));  // 16-byte rows

  // Activations: one scale per row and 128 K; weights: one per 128x128 block. Both K-major.
  static constexpr int kRowsPerScaleA = SWAP ? 128 : 1, kRowsPerScaleB = SWAP ? 1 : 128;
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<kRowsPerScaleA, kRowsPerScaleB, 128,
                                                                cute::GMMA::Major::K, cute::GMMA::Major::K>;
  using LayoutSFA = typename ScaleConfig::LayoutSFA;
  using LayoutSFB = typename ScaleConfig::LayoutSFB;

  using RowWeight = std::conditional_t<
      SWAP,
      cutlass::epilogue::fusion::Sm90RowBroadcast<0, Tile, float*, float, cute::Stride<cute::_0, cute::_1, cute::_0>, 1>,
      cutlass::epilogue::fusion::Sm90ColBroadcast<0, Tile, float*, float, cute::Stride<cute::_1, cute::_0, cute::_0>, 1>>;
  using LayoutD = std::conditional_t<SWAP, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using Scale = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, OUT, float,
                                                       cutlass::FloatRoundStyle::round_to_nearest>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<Scale, cutlass::epilogue::fusion::Sm90AccFetch, RowWeight>;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD*, kAlignD, OUT, LayoutD*, kAlignD,
      EpiSchedule, Fusion>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::float_e4m3_t,
      cute::tuple<cutlass::layout::RowMajor*, LayoutSFA*>, kAlignAB, cutlass::float_e4m3_t,
      cute::tuple<cutlass::layout::ColumnMajor*, LayoutSFB*>, kAlignAB, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Problem, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  // The setup kernel writes the scale layouts as plain ints (grouped_arguments checks the rest).
  static_assert(sizeof(LayoutSFA) == kScaleLayoutInts * sizeof(int));
  static_assert(sizeof(LayoutSFB) == kScaleLayoutInts * sizeof(int));

  // What the setup kernel writes for an expert (scale_layout) must be CUTLASS's own layout,
  // byte for byte: checked on the host when a plan is made, for a shape with every field distinct.
  // CUTLASS's M and N are the rows and the weights' rows (swapped: the other way round).
  static void check_scale_layouts() {
    const int rows = 37, n = 384, k = 640;
    const int m_dim = SWAP ? n : rows, n_dim = SWAP ? rows : n;
    int mine[kScaleLayoutInts];
    scale_layout(mine, m_dim / kRowsPerScaleA, k / 128);
    const LayoutSFA a = ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(m_dim, n_dim, k, 1));
    const LayoutSFB b = ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(m_dim, n_dim, k, 1));
    int theirs[kScaleLayoutInts];
    std::memcpy(theirs, &a, sizeof(theirs));
    const bool a_ok = std::memcmp(mine, theirs, sizeof(mine)) == 0;
    scale_layout(mine, n_dim / kRowsPerScaleB, k / 128);
    std::memcpy(theirs, &b, sizeof(theirs));
    if (!a_ok || std::memcmp(mine, theirs, sizeof(mine)) != 0)
      throw Error("gmm wgmma fp8: the setup kernel's scale layouts are not CUTLASS's (a bug: rebuild against CUTLASS 4.2)");
  }

  static typename Gemm::Arguments arguments(const PlanArgs& p) {
    auto args = grouped_arguments<GroupedGemmFp8>(p);
    args.mainloop.ptr_SFA = p.g.sfa;
    args.mainloop.layout_SFA = reinterpret_cast<LayoutSFA*>(p.g.layout_sfa);
    args.mainloop.ptr_SFB = p.g.sfb;
    args.mainloop.layout_SFB = reinterpret_cast<LayoutSFB*>(p.g.layout_sfb);
    return args;
  }

  static std::unique_ptr<Planned> plan(const PlanArgs& p) {
    check_scale_layouts();
    return std::make_unique<CutlassPlan<GroupedGemmFp8>>(p);
  }

  // moebench's names: block_m counts token rows, block_n weight rows (swapped: CUTLASS's N, M).
  static TileShape shape() { return SWAP ? TileShape{BN, BM, BK, CN, CM, PINGPONG} : TileShape{BM, BN, BK, CM, CN, PINGPONG}; }
};

// Up's instantiation (fp32 out): the entry of the shape.
template <int BM, int BN, int BK, int CM, int CN, bool PINGPONG, bool SWAP = false>
Entry make_fp8_entry() {
  using G = GroupedGemmFp8<BM, BN, BK, CM, CN, PINGPONG, float, SWAP>;
  Entry e = described<G>();
  e.fp8 = &G::plan;
  e.check_scale_layouts = &G::check_scale_layouts;
  return e;
}

// Down's instantiation (bf16 out), in its own translation unit, added to the shape's entry.
template <int BM, int BN, int BK, int CM, int CN, bool PINGPONG, bool SWAP = false>
Variant make_fp8_down() {
  using G = GroupedGemmFp8<BM, BN, BK, CM, CN, PINGPONG, cutlass::bfloat16_t, SWAP>;
  Variant v = described<G, Variant>();
  v.plan = &G::plan;
  v.check_scale_layouts = &G::check_scale_layouts;
  return v;
}

}  // namespace moe::gmm::wgmma
