#pragma once
// A planned CUTLASS grouped GEMM, whichever kernel `G` instantiates (bf16/f16 or fp8
// blockwise-scaled): arguments checked and params built once, then launch() is the kernel alone.
// G provides Problem, Gemm, Kernel, kClusterM/N, shape() and arguments(PlanArgs). Included by the instantiating units only.
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>

#include <string>

#include "gmm/wgmma/wgmma_configs.hpp"
#include "gmm/wgmma/wgmma_failure.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::wgmma {

// The arguments every grouped GEMM here shares: per-expert shapes, A/B/D pointers and strides
// from the setup kernel's arrays (they hold exactly what CUTLASS reads; only the pointee types
// differ), no C, and the epilogue's {accumulator, routed-weight column, multiply}.
template <class G>
typename G::Gemm::Arguments grouped_arguments(const PlanArgs& p) {
  // The setup kernel writes plain arrays (it includes no CUTLASS): check they are what CUTLASS reads.
  static_assert(sizeof(typename G::Problem::UnderlyingProblemShape) == 3 * sizeof(int));
  static_assert(sizeof(typename G::Kernel::InternalStrideA) == sizeof(long long));
  static_assert(sizeof(typename G::Kernel::InternalStrideB) == sizeof(long long));
  static_assert(sizeof(typename G::Kernel::InternalStrideD) == sizeof(long long));
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<0>(typename G::Kernel::InternalStrideA{}))>,
                                int64_t> &&
                cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<1>(typename G::Kernel::InternalStrideA{}))>,
                                cute::_1>);
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<0>(typename G::Kernel::InternalStrideB{}))>,
                                int64_t>);
  // D's one dynamic stride: its rows' (row-major) or, swapped, its columns' (D^T column-major).
  static_assert(cute::is_same_v<cute::remove_cvref_t<decltype(cute::get<G::kSwap ? 1 : 0>(
                                    typename G::Kernel::InternalStrideD{}))>,
                                int64_t>);
  typename G::Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = {p.experts, reinterpret_cast<typename G::Problem::UnderlyingProblemShape*>(p.g.problems),
                        nullptr};
  args.mainloop.ptr_A = reinterpret_cast<decltype(args.mainloop.ptr_A)>(p.g.a);
  args.mainloop.dA = reinterpret_cast<decltype(args.mainloop.dA)>(p.g.lda);
  args.mainloop.ptr_B = reinterpret_cast<decltype(args.mainloop.ptr_B)>(p.g.b);
  args.mainloop.dB = reinterpret_cast<decltype(args.mainloop.dB)>(p.g.ldb);
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = nullptr;
  args.epilogue.ptr_D = reinterpret_cast<decltype(args.epilogue.ptr_D)>(p.g.d);
  args.epilogue.dD = reinterpret_cast<decltype(args.epilogue.dD)>(p.g.ldd);
  args.epilogue.thread = {{}, {p.row_weight ? p.g.row_weight : nullptr, 1.0f, {}}, {}};
  args.hw_info.device_id = p.device;
  args.hw_info.sm_count = p.sm_count;
  return args;
}

// CUTLASS's workspace for `experts` groups (it depends on the SM count, not on the shapes).
template <class G>
std::size_t grouped_workspace(int experts, int sm_count) {
  PlanArgs p;
  p.experts = experts;
  p.sm_count = sm_count;
  return G::Gemm::get_workspace_size(G::arguments(p));
}

// An instantiation's shape, shared memory and workspace, as its Entry (or Variant) holds them.
template <class G, class E = Entry>
E described() {
  E e;
  e.shape = G::shape();
  e.smem = G::Kernel::SharedStorageSize;
  e.cutlass_workspace = &grouped_workspace<G>;
  return e;
}

template <class G>
class CutlassPlan final : public Planned {
  using Gemm = typename G::Gemm;
  using Kernel = typename G::Kernel;
  static constexpr int CM = G::kClusterM, CN = G::kClusterN;

 public:
  explicit CutlassPlan(const PlanArgs& p) {
    auto args = G::arguments(p);
    const std::string what = "gmm wgmma " + shape_str(G::shape()) + ": ";
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
      if (n <= 0) throw Error("gmm wgmma " + shape_str(G::shape()) + ": no cluster of this kernel fits the device: use a 1x1 cluster");
      return n;
    }
  }

  mutable Gemm gemm_;
  unsigned grid_ = 0;
};

}  // namespace moe::gmm::wgmma
