#pragma once
// One CUTLASS sm90 ptr-array grouped GEMM: D[e] = A[e] * B[e]^T for every local expert, both
// operands K-contiguous, per-expert shapes and pointers read from device arrays (the host never
// sees the row counts). Its epilogue multiplies each row by a per-expert column of routed
// weights when one is given, and by 1 when the column pointer is null, so one kernel per shape
// serves both stages. Included by exactly one translation unit per instantiation (each costs
// about a minute and 3 GB of compiler memory).
// SWAP: the operands trade places for experts of few rows (wgmma's M is at least 64 a
// warpgroup): D[e]^T = W[e] * X[e]^T, the weights' rows along CUTLASS's M (BM of them a tile) and
// the tokens along its N (BN), D^T column-major, which is D row-major in the same memory; the
// routed weights become a row broadcast. The setup kernel writes the swapped arrays.
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_compute_tma_warpspecialized.hpp>
#include <cutlass/epilogue/fusion/sm90_visitor_load_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include <string>

#include "gmm/wgmma/wgmma_configs.hpp"
#include "gmm/wgmma/wgmma_plan.cuh"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::wgmma {

template <class Element, int BM, int BN, int BK, int CM, int CN, bool PINGPONG, bool SWAP = false>
struct GroupedGemm {
  using Tile = cute::Shape<cute::Int<BM>, cute::Int<BN>, cute::Int<BK>>;
  using Cluster = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using Problem = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using MainSchedule = std::conditional_t<PINGPONG, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong,
                                          cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>;
  using EpiSchedule = std::conditional_t<PINGPONG, cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong,
                                         cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
  static constexpr int kClusterM = CM, kClusterN = CN;
  static constexpr int kAlign = 8;  // 16 bytes of 16-bit elements: TMA's requirement

  // The routed weights are a column per expert (array of pointers), read one float at a time:
  // a row's weight is only 4-byte aligned. Null array: every row is scaled by 1.
  using RowWeight = std::conditional_t<
      SWAP,
      cutlass::epilogue::fusion::Sm90RowBroadcast<0, Tile, float*, float, cute::Stride<cute::_0, cute::_1, cute::_0>, 1>,
      cutlass::epilogue::fusion::Sm90ColBroadcast<0, Tile, float*, float, cute::Stride<cute::_1, cute::_0, cute::_0>, 1>>;
  using LayoutD = std::conditional_t<SWAP, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr bool kSwap = SWAP;
  using Scale = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, Element, float,
                                                       cutlass::FloatRoundStyle::round_to_nearest>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<Scale, cutlass::epilogue::fusion::Sm90AccFetch, RowWeight>;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD*, kAlign,
      Element, LayoutD*, kAlign, EpiSchedule, Fusion>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor*, kAlign, Element,
      cutlass::layout::ColumnMajor*, kAlign, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Problem, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  static typename Gemm::Arguments arguments(const PlanArgs& p) { return grouped_arguments<GroupedGemm>(p); }

  static std::unique_ptr<Planned> plan(const PlanArgs& p) { return std::make_unique<CutlassPlan<GroupedGemm>>(p); }

  // moebench's names: block_m counts token rows, block_n weight rows (swapped: CUTLASS's N, M).
  static TileShape shape() { return SWAP ? TileShape{BN, BM, BK, CN, CM, PINGPONG} : TileShape{BM, BN, BK, CM, CN, PINGPONG}; }
};

template <int BM, int BN, int BK, int CM, int CN, bool PINGPONG, bool WITH_F16>
Entry make_entry() {
  using Bf16 = GroupedGemm<cutlass::bfloat16_t, BM, BN, BK, CM, CN, PINGPONG>;
  Entry e = described<Bf16>();
  e.bf16 = &Bf16::plan;
  if constexpr (WITH_F16) e.f16 = &GroupedGemm<cutlass::half_t, BM, BN, BK, CM, CN, PINGPONG>::plan;
  return e;
}

// The swapped-operand shape (bf16): BM weight rows by BN token rows a CUTLASS tile.
template <int BM, int BN, int BK, bool PINGPONG>
Entry make_swapped_entry() {
  using G = GroupedGemm<cutlass::bfloat16_t, BM, BN, BK, 1, 1, PINGPONG, true>;
  Entry e = described<G>();
  e.bf16 = &G::plan;
  return e;
}

}  // namespace moe::gmm::wgmma
