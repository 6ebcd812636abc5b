#pragma once
// One CUTLASS sm90 ptr-array grouped GEMM: D[e] = A[e] * B[e]^T for every local expert, both
// operands K-contiguous, per-expert shapes and pointers read from device arrays (the host never
// sees the row counts). Its epilogue multiplies each row by a per-expert column of routed
// weights when one is given, and by 1 when the column pointer is null, so one kernel per shape
// serves both stages. Included by exactly one translation unit per instantiation (each costs
// about a minute and 3 GB of compiler memory).
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

#include "gmm/wgmma_configs.hpp"
#include "gmm/wgmma_failure.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::wgmma {

template <class Element, int BM, int BN, int BK, int CM, int CN, bool PINGPONG>
struct GroupedGemm {
  using Tile = cute::Shape<cute::Int<BM>, cute::Int<BN>, cute::Int<BK>>;
  using Cluster = cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>;
  using Problem = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using MainSchedule = std::conditional_t<PINGPONG, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong,
                                          cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>;
  using EpiSchedule = std::conditional_t<PINGPONG, cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong,
                                         cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
  static constexpr int kAlign = 8;  // 16 bytes of 16-bit elements: TMA's requirement

  // The routed weights are a column per expert (array of pointers), read one float at a time:
  // a row's weight is only 4-byte aligned. Null array: every row is scaled by 1.
  using RowWeight = cutlass::epilogue::fusion::Sm90ColBroadcast<0, Tile, float*, float,
                                                                cute::Stride<cute::_1, cute::_0, cute::_0>, 1>;
  using Scale = cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, Element, float,
                                                       cutlass::FloatRoundStyle::round_to_nearest>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<Scale, cutlass::epilogue::fusion::Sm90AccFetch, RowWeight>;

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::RowMajor*, kAlign,
      Element, cutlass::layout::RowMajor*, kAlign, EpiSchedule, Fusion>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor*, kAlign, Element,
      cutlass::layout::ColumnMajor*, kAlign, float, Tile, Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Problem, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  // The setup kernel writes plain arrays (it includes no CUTLASS): check they are what CUTLASS reads.
  static_assert(sizeof(typename Problem::UnderlyingProblemShape) == 3 * sizeof(int));
  static_assert(sizeof(typename Kernel::InternalStrideA) == sizeof(long long));
  static_assert(sizeof(typename Kernel::InternalStrideB) == sizeof(long long));
  static_assert(sizeof(typename Kernel::InternalStrideD) == sizeof(long long));
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<0>(typename Kernel::InternalStrideA{}))>,
                                int64_t> &&
                cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<1>(typename Kernel::InternalStrideA{}))>,
                                cute::_1>);
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<0>(typename Kernel::InternalStrideB{}))>,
                                int64_t>);
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<0>(typename Kernel::InternalStrideD{}))>,
                                int64_t>);

  static typename Gemm::Arguments arguments(const PlanArgs& p) {
    typename Gemm::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    args.problem_shape = {p.experts, reinterpret_cast<typename Problem::UnderlyingProblemShape*>(p.g.problems),
                          nullptr};
    // The arrays hold exactly what CUTLASS reads (checked above); only the pointee types differ.
    args.mainloop.ptr_A = reinterpret_cast<decltype(args.mainloop.ptr_A)>(p.g.a);
    args.mainloop.dA = reinterpret_cast<decltype(args.mainloop.dA)>(p.g.lda);
    args.mainloop.ptr_B = reinterpret_cast<decltype(args.mainloop.ptr_B)>(p.g.b);
    args.mainloop.dB = reinterpret_cast<decltype(args.mainloop.dB)>(p.g.ldb);
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = nullptr;
    args.epilogue.ptr_D = reinterpret_cast<decltype(args.epilogue.ptr_D)>(p.g.d);
    args.epilogue.dD = reinterpret_cast<decltype(args.epilogue.dD)>(p.g.ldd);
    // EVT arguments: {accumulator, routed-weight column, multiply}.
    args.epilogue.thread = {{}, {p.row_weight ? p.g.row_weight : nullptr, 1.0f, {}}, {}};
    args.hw_info.device_id = p.device;
    args.hw_info.sm_count = p.sm_count;
    return args;
  }

  static std::size_t workspace(int experts, int sm_count) {
    PlanArgs p;
    p.experts = experts;
    p.sm_count = sm_count;
    return Gemm::get_workspace_size(arguments(p));
  }

  class Plan final : public Planned {
   public:
    explicit Plan(const PlanArgs& p) {
      auto args = arguments(p);
      const std::string what = "gmm wgmma " + shape_str(shape()) + ": ";
      if (Gemm::can_implement(args) != cutlass::Status::kSuccess)
        throw Error(what + "CUTLASS cannot run this problem (N=" + std::to_string(p.n) + ", K=" +
                    std::to_string(p.k) + "): use kernel=mma");
      args.hw_info.max_active_clusters = max_active_clusters();
      const cutlass::Status st = gemm_.initialize(args, p.workspace);
      if (st != cutlass::Status::kSuccess)
        throw Error(what + "initialize failed (" +
                    explain_cutlass_failure(cutlassGetStatusString(st), kernel(), Kernel::SharedStorageSize) +
                    "): the device may lack the shared memory this tile needs; use a smaller tile or kernel=mma");
      const dim3 g = Gemm::get_grid_shape(gemm_.params());
      grid_ = g.x * g.y * g.z;
    }
    void launch(void* stream) const override {
      // run() on the params built once: the kernel launch and nothing else.
      const cutlass::Status st = gemm_.run(static_cast<cudaStream_t>(stream));
      if (st != cutlass::Status::kSuccess)
        throw Error("gmm wgmma grouped GEMM launch failed: " +
                    explain_cutlass_failure(cutlassGetStatusString(st), kernel(), Kernel::SharedStorageSize, stream));
      count_launch(reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>), grid_, Kernel::MaxThreadsPerBlock,
                   Kernel::SharedStorageSize);
    }

   private:
    static const void* kernel() { return reinterpret_cast<const void*>(&cutlass::device_kernel<Kernel>); }

    // The persistent scheduler's cluster count: cudaOccupancyMaxActiveClusters for the kernel's
    // real cluster, block and shared memory (left 0, CUTLASS assumes every SM pair can host one).
    static int max_active_clusters() {
      if constexpr (CM * CN == 1) {
        return 0;  // no cluster: the SM count decides
      } else {
        const int n = cached_max_active_clusters(kernel(), CM, CN, Kernel::MaxThreadsPerBlock, Kernel::SharedStorageSize);
        if (n <= 0) throw Error("gmm wgmma " + shape_str(shape()) + ": no cluster of this kernel fits the device: use a 1x1 cluster");
        return n;
      }
    }

    mutable Gemm gemm_;
    unsigned grid_ = 0;
  };

  static std::unique_ptr<Planned> plan(const PlanArgs& p) { return std::make_unique<Plan>(p); }

  static TileShape shape() { return TileShape{BM, BN, BK, CM, CN, PINGPONG}; }
};

template <int BM, int BN, int BK, int CM, int CN, bool PINGPONG, bool WITH_F16>
Entry make_entry() {
  using Bf16 = GroupedGemm<cutlass::bfloat16_t, BM, BN, BK, CM, CN, PINGPONG>;
  Entry e;
  e.shape = Bf16::shape();
  e.smem = Bf16::Kernel::SharedStorageSize;
  e.cutlass_workspace = &Bf16::workspace;
  e.bf16 = &Bf16::plan;
  if constexpr (WITH_F16) e.f16 = &GroupedGemm<cutlass::half_t, BM, BN, BK, CM, CN, PINGPONG>::plan;
  return e;
}

}  // namespace moe::gmm::wgmma
