#pragma once
// The Hopper grouped GEMM (CUTLASS sm90 ptr-array, wgmma + TMA, warp-specialized) as the cuda
// backend sees it: its instantiated shapes, the device arrays a small setup kernel fills from
// `offsets`, and how the host plans a config once and then only launches. Plain C++ (no CUDA or
// CUTLASS types) so the backend description and the cpu tests can include it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmm/spec.hpp"
#include "moe/family.hpp"

namespace moe::gmm::wgmma {

// One CUTLASS instantiation: CTA tile, cluster and schedule (cooperative: two consumer
// warpgroups share a tile; pingpong: they alternate tiles, hiding the epilogue).
struct TileShape {
  int bm = 128, bn = 128, bk = 64;
  int cluster_m = 1, cluster_n = 1;
  bool pingpong = false;
  bool operator==(const TileShape&) const = default;
  // Fewer token rows than a warpgroup's wgmma takes (64): the swapped-operand kernel, weights
  // along CUTLASS's M (bn of them), tokens along its N (bm).
  bool swapped() const { return bm < 64; }
};
std::string shape_str(const TileShape& s);  // "128x128x64 cooperative cluster 1x1"

// Per-expert arguments of the grouped GEMM, written on the device by the setup kernel (so the
// host never reads `offsets`). Every array has one element per local expert and lives in the
// call's workspace; CUTLASS reads them through the pointers it was planned with.
struct GroupArrays {
  int* problems = nullptr;             // [E][3]: rows of the expert (M), N, K
  const void** a = nullptr;            // activations of the expert's rows
  const void** b = nullptr;            // the expert's weights [N, K]
  void** d = nullptr;                  // output rows
  const float** row_weight = nullptr;  // the expert's routed weights; unused when the plan has none
  long long* lda = nullptr;            // row strides (elements) of A, B and D
  long long* ldb = nullptr;
  long long* ldd = nullptr;
  // fp8 only (null otherwise): each expert's activation and weight scales, and their CUTLASS
  // layouts as kScaleLayoutInts ints an expert (scale_layout).
  const float** sfa = nullptr;
  const float** sfb = nullptr;
  int* layout_sfa = nullptr;
  int* layout_sfb = nullptr;
};

// CUTLASS's K-major blockwise scale layout of one expert, ((1|128, mn), (128, kb), 1) with
// strides ((0, kb), (0, 1), mn*kb), as the ints it keeps in memory: mn = rows (activations) or
// 128-row blocks (weights), kb = K/128. The fp8 GEMM checks this against CUTLASS when it plans.
inline constexpr int kScaleLayoutInts = 5;
constexpr void scale_layout(int* out, int mn, int kb) {
  out[0] = mn;
  out[1] = kb;
  out[2] = 1;
  out[3] = kb;
  out[4] = mn * kb;
}

// What the setup kernel reads: the call's tensors (device pointers) and the problem.
struct SetupArgs {
  const std::uint16_t* act = nullptr;     // [rows, k]
  const std::uint16_t* weight = nullptr;  // [experts, n, k]
  const std::int32_t* offsets = nullptr;  // [experts + 1]
  const float* row_weight = nullptr;      // [rows] or null
  std::uint16_t* out = nullptr;           // [rows, n]: the GEMM's output (up: gate|up workspace)
  int rows = 0, n = 0, k = 0, experts = 0;
  int in_bytes = 2, out_bytes = 2;        // element sizes of act/weight and of out (fp8: 1 and 4)
  bool swap = false;                      // the swapped-operand GEMM: A the weights, B the rows
  const float* act_scale = nullptr;       // fp8: [rows, k/128]
  const float* weight_scale = nullptr;    // fp8: [experts, n/128, k/128]
  GroupArrays g;
};

// The setup and silu kernels' grid for `items` (experts; rows x I/8): grid-stride loops, so a
// grid this size covers the largest problems in a few passes and stays fixed, and a call never
// asks the device anything. 256 threads a block (kWgmmaThreads).
inline unsigned blocks_for(long long items) {
  const long long b = (items + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

// silu(gate) * up over the gate|up rows the up GEMM wrote: h[r, j] = silu(gu[r, j]) * gu[r, I + j]
// for every row of an expert (rows past offsets[E] are not the stage's), 8 elements a thread.
struct SiluArgs {
  const std::uint16_t* gu = nullptr;  // [rows, 2I]
  const std::int32_t* offsets = nullptr;
  std::uint16_t* h = nullptr;  // [rows, I]
  int rows = 0, inter = 0, experts = 0;
};

// fp8 up: h + h_scale from the GEMM's fp32 gate|up rows (kernels/gmm/fp8_silu_quant_kernels.cuh).
struct SiluQuantLaunch {
  const float* gu = nullptr;  // [rows, 2I]
  const std::int32_t* offsets = nullptr;
  std::uint8_t* h = nullptr;  // [rows, I] e4m3
  float* h_scale = nullptr;   // [rows, I/128]
  int rows = 0, inter = 0, experts = 0;
  bool ue8m0 = false;
};

// Device kernels free of CUTLASS (wgmma_setup.cu, wgmma_fp8_epilogue.cu; the cpu tests run
// their sources emulated).
void launch_setup(const SetupArgs& a, void* stream);
void launch_silu(const SiluArgs& a, bool bf16, void* stream);
void launch_silu_quant(const SiluQuantLaunch& a, void* stream);

// A planned grouped GEMM: CUTLASS's arguments checked and its params built, shared memory
// attribute set. launch() is the GEMM kernel alone: no host sync, no other API call, so the
// call it belongs to can be captured in a CUDA graph.
class Planned {
 public:
  virtual ~Planned() = default;
  virtual void launch(void* stream) const = 0;
};

struct PlanArgs {
  int experts = 0, n = 0, k = 0;
  GroupArrays g;
  bool row_weight = false;  // multiply each output row by its routed weight (down)
  void* workspace = nullptr;  // CUTLASS's own, workspace_bytes(experts, sm_count) of it
  int sm_count = 0, device = 0;
};

using PlanFn = std::unique_ptr<Planned> (*)(const PlanArgs&);  // throws Error saying why not

using WorkspaceFn = std::size_t (*)(int experts, int sm_count);

// fp8: throws Error when the scale layouts the setup kernel writes (scale_layout) are not the
// instantiation's own CUTLASS layouts; host code only, so the cpu tests run it too.
using LayoutCheckFn = void (*)();

// A second instantiation of a shape with another output (fp8 down: bf16 rows).
struct Variant {
  TileShape shape;
  std::size_t smem = 0;
  WorkspaceFn cutlass_workspace = nullptr;
  PlanFn plan = nullptr;
  LayoutCheckFn check_scale_layouts = nullptr;
};

struct Entry {
  TileShape shape;
  std::size_t smem = 0;  // the kernel's shared memory (bytes)
  WorkspaceFn cutlass_workspace = nullptr;
  // null: not built. fp8: e4m3 operands, fp32 out (up's gate|up); fp8_down: bf16 out.
  PlanFn bf16 = nullptr, f16 = nullptr, fp8 = nullptr;
  LayoutCheckFn check_scale_layouts = nullptr;  // fp8's
  Variant fp8_down;
  PlanFn get(DType t, bool down) const {
    if (t == DType::e4m3) return down ? fp8_down.plan : fp8;
    return t == DType::bf16 ? bf16 : t == DType::f16 ? f16 : nullptr;
  }
  std::size_t smem_for(DType t, bool down) const { return t == DType::e4m3 && down ? fp8_down.smem : smem; }
  WorkspaceFn workspace_for(DType t, bool down) const {
    return t == DType::e4m3 && down ? fp8_down.cutlass_workspace : cutlass_workspace;
  }
};

// Every instantiated shape, in a fixed order (wgmma_gemm_*.cu add theirs).
const std::vector<Entry>& entries();
Entry entry_128x128x64_coop();
Entry entry_128x256x64_coop();
Entry entry_64x128x64_pingpong();
Entry entry_64x256x64_pingpong();
Entry entry_128x128x64_coop_c2x1();
Entry entry_128x256x64_coop_c1x2();
Entry entry_32x128x128_coop_swapped();
Entry entry_fp8_128x128x128_coop_c2x1();
Entry entry_fp8_64x128x128_pingpong();
Entry entry_fp8_128x128x128_coop_c1x2();
Entry entry_fp8_32x128x128_pingpong_c1x2_swapped();
Variant fp8_down_128x128x128_coop_c2x1();
Variant fp8_down_128x128x128_coop_c1x2();
Variant fp8_down_64x128x128_pingpong();
Variant fp8_down_32x128x128_pingpong_c1x2_swapped();

// A wgmma config of the cuda backend: the shape (its kernel=wgmma parameters).
struct Config {
  TileShape shape;
};
// The cuda backend's `kernel` parameter names the implementation; these are the parameters
// only kernel=wgmma reads (cluster_m, cluster_n, schedule), and the names only kernel=mma reads.
std::vector<ParamSpec> config_params();
inline const std::vector<std::string> kMmaOnly = {"warps_m", "warps_n", "stages", "split_k", "group_m"};
inline const std::vector<std::string> kWgmmaOnly = {"cluster_m", "cluster_n", "schedule"};
bool selected(const Params& config);  // kernel=wgmma (a config without `kernel` is mma)
Config parse_config(const Params& config);
Params config_params(const Config& c);  // kernel, block_m/n/k, cluster_m/n, schedule
// The config's workspace: the per-expert arrays, CUTLASS's tensor maps and (up) the gate|up
// rows of the most rows the problem can have. `sm_count` 0: the largest Hopper part.
std::size_t workspace_bytes(const GmmSpec& s, const Config& c, int sm_count = 0);
// Why `c` cannot run the problem on `dev` (empty: it can).
std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev);
// The backend's launch plan of a wgmma config. CUTLASS's params hold the workspace's arrays, so
// the plan proper is made by the first call on a workspace (the bench's warm-up); the slot
// keeps it, so every later call on that workspace goes straight to the launches.
struct ResolvedPlan;
struct LaunchSlot : LaunchPlan {
  GmmSpec spec;   // the problem and config it was made for: a planned call parses neither again
  Config config;
  mutable std::shared_ptr<const ResolvedPlan> resolved;  // kept alive here when the cache drops it
  mutable const void* workspace = nullptr;
};
std::shared_ptr<const LaunchSlot> launch_slot(const GmmSpec& s, const Config& c, std::int64_t rows);
// Plans the config for this workspace (once: later calls with the same problem, config and
// workspace reuse the plan, through `slot` without a lookup), then launches setup + GEMM
// (+ silu for up) on `stream`.
void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, const LaunchSlot* slot = nullptr);
// Plans in the process cache, which holds at most kMaxPlans: a plan is made per workspace
// pointer, and an engine that allocates workspaces per call must not grow it without end.
inline constexpr std::size_t kMaxPlans = 64;
std::size_t cached_plans();

}  // namespace moe::gmm::wgmma
