#pragma once
// The cuda backend's compile-time tile shapes and how the host reaches them. Plain C++ (no
// CUDA types) so the backend description (cuda_backend.cpp) and the tests can include it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmm/expert_fn_args.hpp"
#include "gmm/spec.hpp"
#include "moe/family.hpp"

namespace moe::gmm::cuda {

// One instantiated mma.sync kernel shape. block_n counts weight rows per CTA: up interleaves
// block_n/2 gate rows with the matching block_n/2 up rows, so a CTA writes block_n/2 columns of h.
struct TileShape {
  int bm, bn, bk, warps_m, warps_n, stages;
  int threads() const { return warps_m * warps_n * 32; }
  bool operator==(const TileShape&) const = default;
};

// Shared memory of a tile shape: `stages` A and B tiles with rows padded by 16 bytes (so the
// ldmatrix rows of a warp hit distinct banks). The tile map lives in global memory
// (cuda_tile_map.cuh), so `experts` no longer adds to it; kept for the callers' signature.
constexpr std::size_t kRowPad = 8;  // elements
inline std::size_t smem_bytes(const TileShape& t, std::int64_t /*experts*/) {
  return static_cast<std::size_t>(t.stages) * static_cast<std::size_t>(t.bm + t.bn) *
         (static_cast<std::size_t>(t.bk) + kRowPad) * 2;
}

// n / d for 0 <= n < 2^31 as a multiply-high, an add and a shift: the kernel decodes its tile
// index with it before its first load, where a division would cost ~20 instructions.
struct FastDiv {
  std::uint32_t mul = 1, shift = 0;
};
inline FastDiv fast_div_by(int d) {
  FastDiv f;
  while ((std::uint64_t{1} << f.shift) < static_cast<std::uint64_t>(d)) ++f.shift;
  f.mul = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << f.shift) - d)) / d + 1);
  return f;
}
// What the device computes, for the host (tests, planning checks).
inline int fast_div(int n, FastDiv f) {
  const auto hi = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * f.mul) >> 32);
  return static_cast<int>((hi + static_cast<std::uint32_t>(n)) >> f.shift);
}

// The schedule kernel's block (cuda_tile_map.cuh); its shared memory is the prefix and a count.
constexpr int kScheduleThreads = 256;
inline std::size_t schedule_smem_bytes(std::int64_t experts) { return static_cast<std::size_t>(experts + 2) * 4; }

// Everything a kernel needs, passed by value to it (host and device see the same layout).
struct KernelArgs {
  const std::uint16_t* act = nullptr;     // [rows, k_dim]
  const std::uint16_t* weight = nullptr;  // [experts, n_w, k_dim]
  const std::int32_t* offsets = nullptr;  // [experts + 1]
  const float* row_weight = nullptr;      // [rows] or null
  std::uint16_t* out = nullptr;           // [rows, n_out]
  float* partial = nullptr;               // [split, rows, n_w] fp32 when split > 1
  std::int32_t* tile_map = nullptr;       // [map_tiles + 1, 4] {expert, row0, row_end, M-tiles}, the status
  int rows = 0, k_dim = 0, n_out = 0, n_w = 0, experts = 0;
  int split = 1;
  int n_tiles = 0;    // CTA tiles along N
  int group_m = 1;    // tile order: M-tiles walked together per N-tile (weight tiles reused in L2)
  int sm_count = 0;   // the persistent grid's size comes from it
  int max_ctas = 0;   // 0: as many as fit at once; tests set it to force several tiles per CTA
  int map_tiles = 0;  // tile map entries: the most M-tiles `rows` can make, ceil(rows/bm) + experts
  FastDiv split_div, n_tiles_div, group_m_div, group_tiles_div;  // by split, n_tiles, group_m, group_m * n_tiles
  // Split-K's share of the K slices, for decode's 16-row tiles and the fp8 kernel (set_k_slices):
  // split s takes k_per slices, one more when s < k_extra, starting at s * k_per + min(s, k_extra);
  // a partial last slice (K not a multiple of block_k) is the last split's.
  int k_per = 0, k_extra = 0;
  int tail_split = -1;       // the split with a partial slice (k_last < block_k): the last; else -1
  int tail_only_split = -1;  // the split whose only slice is partial; else -1
  std::uint32_t up_elems = 0;  // fn.up_rows (else n_out) * k_dim: from a gate row to its up row
  int neg_split = -1, neg_n_tiles = -1;  // a remainder n - q*d is then one multiply-add
  // The expert function, for the kernels instantiated with it (expert_fn.cuh); plain
  // instantiations never read it.
  ExpertFnArgs fn;
  // Combine folded into down (combine_fold.cuh; the layer's decode path): the last tile of each
  // N-tile to finish sums every token's rows of those columns, as the combine stage would, into
  // out. done: tiles finished per N-tile, zeroed before the kernel (by the layer's front); null:
  // no fold (down writes y_sorted, combine runs as its own kernel).
  struct Fold {
    const std::int32_t* dst = nullptr;  // [tokens * slots]: a slot's row, -1 when not routed here
    const float* weights = nullptr;     // [tokens * slots]
    std::uint16_t* out = nullptr;       // [tokens, n_out]
    std::int32_t* done = nullptr;       // [n_tiles]
    int tokens = 0, slots = 0;
  } fold;
  // 1: the tile map was complete before this kernel's predecessor let it launch (the layer's
  // decode front wrote down's map two kernels back, and every kernel of ours waits before it
  // triggers), so a 16-row down kernel reads its first entry and sends that tile's weights to L2
  // before its PDL wait (prefetch_first_tile). 0: the map may be the predecessor's own output.
  int map_early = 0;
};

inline void set_k_slices(KernelArgs& a, int bk) {
  const int slices = (a.k_dim + bk - 1) / bk;
  const bool partial = a.k_dim % bk != 0;
  a.k_per = slices / a.split;
  a.k_extra = slices % a.split;
  a.tail_split = partial ? a.split - 1 : -1;
  a.tail_only_split = partial && a.k_per == 1 ? a.split - 1 : -1;
  // Split layout: I rows (n_out) from gate to up; interleaved: the block (plan_args sets fn first).
  const int up_rows = a.fn.up_rows > 0 ? a.fn.up_rows : a.n_out;
  a.up_elems = static_cast<std::uint32_t>(up_rows) * static_cast<std::uint32_t>(a.k_dim);
  a.neg_split = -a.split;
  a.neg_n_tiles = -a.n_tiles;
}

// Planning and launching are apart: a config's launches are planned once (shared-memory
// opt-in, occupancy, grid) when it is set up, and a timed call only launches what was planned.
// A kernel implementation (this mma.sync kernel, or another one) supplies a PlanFn per
// instantiation; each planned launch carries the function that launches it from the call's args.
struct PlannedLaunch;
using LaunchPlannedFn = void (*)(const PlannedLaunch&, const KernelArgs&, void* stream);
struct PlannedLaunch {
  const void* func = nullptr;  // the __global__ function (for its attributes)
  unsigned grid = 0, threads = 0;
  std::size_t smem = 0;
  LaunchPlannedFn launch = nullptr;  // null: launch `func` with the KernelArgs by value
  bool schedule = false;             // the schedule kernel: skipped when the call brings its tile map
  bool finalize = false;             // split-K's finalize: skipped when down folds combine (it sums the splits)
};
// Plans the kernel for args' shape fields (rows, dims, split, sm_count...); pointers unused.
using PlanFn = PlannedLaunch (*)(const KernelArgs& shape);

struct TileEntry {
  TileShape shape;
  PlanFn up_bf16 = nullptr, down_bf16 = nullptr, up_f16 = nullptr, down_f16 = nullptr;  // null: not built
  // The expert-function instantiations (bf16 and f16), for a few shapes (cuda_tiles_fn.cu).
  PlanFn up_fn[2] = {}, down_fn[2] = {};  // [bf16]
  PlanFn get(bool down, DType t) const {
    return t == DType::bf16 ? (down ? down_bf16 : up_bf16) : (down ? down_f16 : up_f16);
  }
  PlanFn get_fn(bool down, DType t) const { return (down ? down_fn : up_fn)[t == DType::bf16 ? 1 : 0]; }
};

// Every instantiated shape, in a fixed order (cuda_tiles_*.cu add theirs).
const std::vector<TileEntry>& tiles();
void add_tiles_m16(std::vector<TileEntry>& v);
void add_tiles_m32(std::vector<TileEntry>& v);
void add_tiles_m64(std::vector<TileEntry>& v);
void add_tiles_m128(std::vector<TileEntry>& v);
// Sets the expert-function kernels of the shapes that have them (after the add_tiles_* above).
void add_fn_kernels(std::vector<TileEntry>& v);

// Split-K finalize: sums the fp32 partials in split order (deterministic) and applies the
// epilogue (silu*up or the routed weight), writing out.
PlannedLaunch plan_finalize(const KernelArgs& a, bool down, DType t, bool expert_fn = false);
// A kernel walking the tile map (`kern`, its `shape` and shared memory): its persistent grid for
// a's shape fields; `what` ("fp8 ", or "") names the kind in the error of a tile that does not
// fit (persistent_plan.cpp).
PlannedLaunch plan_persistent(const void* kern, const TileShape& shape, std::size_t smem, const KernelArgs& a,
                              const char* what);
// The pass flagging all-zero activation rows (a.fn.pad_rows) ahead of a biased stage's kernel.
PlannedLaunch plan_pad_rows(const KernelArgs& a);
// The schedule kernel that writes the tile map for block_m = bm (launched before the gmm kernel;
// its plan launches it with the KernelArgs by value), and the map's bytes for `rows`: 16 per
// M-tile that many rows can make, and 16 for the status entry.
PlannedLaunch plan_schedule(const KernelArgs& a, int bm);
std::size_t map_bytes(std::int64_t rows, int bm, std::int64_t experts);
// The status entry the schedule kernel writes after the map's map_tiles entries: empty when the
// offsets were sound, else what was wrong with them (the kernels stayed in bounds regardless).
std::string map_status_error(const std::int32_t* tile_map, int map_tiles);
// The tile map a call brings as input kTileMapInput (the layer's decode front writes it, in the
// schedule kernel's layout, for block_m = bm), checked against a's shape; null when it brings none.
inline constexpr const char* kTileMapInput = "tile_map";
// The same map, written before the predecessor of this call's first kernel (map_early): the
// layer gives down its map so. Either input points a.tile_map at the call's map (checked against
// a's shape) and says whether there was one.
inline constexpr const char* kEarlyTileMapInput = "early_tile_map";
bool bind_given_tile_map(const RefMap& in, KernelArgs& a, int bm);

constexpr int kSplits[] = {1, 2, 3, 4, 6, 8};
// 1: consecutive CTAs share an M-tile (activations) and sweep N; G > 1: they sweep G M-tiles
// per N-tile, so a weight tile is read by G CTAs close in time (prefill's L2 reuse).
constexpr int kGroupM[] = {1, 4, 8};

// A full cuda config for the problem: shape, split, tile order.
struct Config {
  TileShape shape;
  int split = 1;
  int group_m = 1;
};
Config parse_config(const Params& c);
Params config_params(const Config& c);
// Why `c` cannot run the problem on `dev` (empty: it can).
std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev);
// Workspace for the tile map and split-K's partials, sized for the most rows the problem can have.
std::size_t workspace_bytes(const GmmSpec& s, const Config& c);
// Down folds combine when the call brings kFoldInputs (the slots' rows and weights, the per-N-tile
// counters, zeroed) and kFoldOutput: bind_fold points a.fold at them (checked, and refused where
// fold_invalid_reason says so) and says whether it did. Then split-K's finalize is not launched.
inline constexpr const char* kFoldInputs[] = {"fold_dst", "fold_weights", "fold_done"};
inline constexpr const char* kFoldOutput = "fold_out";
bool bind_fold(KernelArgs& a, const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out);
// Why a stage with config c cannot fold combine (empty: it can).
std::string fold_invalid_reason(const GmmSpec& s, const Config& c);
// One config's launches for one problem and row count: every runtime query is made here.
struct Plan : LaunchPlan {
  GmmSpec spec;                         // the problem and config it was planned for: a planned
  Config config;                        // call parses neither again
  KernelArgs args;                      // shape fields; run() fills the pointers per call
  std::vector<PlannedLaunch> launches;  // the kernel, then split-K's finalize
};
// The shape fields of a config's KernelArgs for `rows` (no device query); Error when invalid.
KernelArgs plan_args(const GmmSpec& s, const Config& c, std::int64_t rows);
// Points `a` at the call's tensors (and split-K's partials in the workspace).
void bind_tensors(KernelArgs& a, const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out,
                  void* workspace, std::size_t workspace_bytes);
std::shared_ptr<const Plan> plan(const GmmSpec& s, const Config& c, std::int64_t rows, int max_ctas = 0);
// Runs on device pointers (the backend's run, and the tests with max_ctas). With `planned`
// (from plan() for these rows) it only launches; without, it plans first.
void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, int max_ctas = 0, const Plan* planned = nullptr);

}  // namespace moe::gmm::cuda
