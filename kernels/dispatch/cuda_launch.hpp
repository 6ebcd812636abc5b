#pragma once
// Host-side interface of the dispatch CUDA kernels (cuda_align.cu, cuda_gather.cu), kept free
// of CUDA headers so the backend description (cuda.cpp) is plain C++.
#include <cstddef>
#include <cstdint>

namespace moe::dispatch_cuda {

struct AlignArgs {
  const std::int32_t* ids = nullptr;  // [slots]
  std::int64_t slots = 0;
  int e0 = 0, local = 0, E_total = 0, A = 1;  // local expert range [e0, e0+local) of [0, E_total)
  std::int32_t* offsets = nullptr;  // [local+1]
  std::int32_t* src = nullptr;      // [rows]
  std::int32_t* dst = nullptr;      // [slots]
  std::int64_t rows = 0;            // R as allocated; writes beyond it are dropped
};

// Instantiated block sizes.
inline constexpr int kSingleThreads[] = {512, 1024};
inline constexpr int kMultiThreads[] = {128, 256};
inline constexpr int kMultiChunks[] = {2048, 8192};
inline constexpr int kScanThreads = 1024;

// The single-CTA aligner's slots per warp: an equal share, rounded up to whole 32-slot rounds
// (the staged entries past the last slot hold no expert), so its loops need no bound checks.
constexpr std::int64_t single_slots_per_warp(int warps, std::int64_t slots) {
  return ((slots + warps - 1) / warps + 31) / 32 * 32;
}
// Dynamic shared memory of each aligner kernel, for the space to check against the device.
// single: one int per (padded) slot, its local expert and then its rank; the multi-CTA kernels
// keep their slots' local expert ids as int16 (local < 32768).
inline std::size_t single_smem_bytes(int threads, std::int64_t local, std::int64_t slots) {
  const std::int64_t warps = threads / 32;
  return static_cast<std::size_t>(warps * local + 3 * local + 1 + warps + 1) * 4 +
         static_cast<std::size_t>(warps * single_slots_per_warp(static_cast<int>(warps), slots)) * 4;
}
// The multi-CTA aligner's three kernels: hist, scan (one CTA of kScanThreads), scatter.
inline std::size_t hist_smem_bytes(std::int64_t local, int chunk) {
  return static_cast<std::size_t>(local + (chunk + 1) / 2) * 4;
}
inline std::size_t scan_smem_bytes(std::int64_t local) {
  return static_cast<std::size_t>(3 * local + 1 + kScanThreads / 32 + 1) * 4;
}
inline std::size_t scatter_smem_bytes(int threads, std::int64_t local, int chunk) {
  return static_cast<std::size_t>(threads / 32 * local + (chunk + 1) / 2) * 4;
}
inline std::size_t multi_smem_bytes(int threads, std::int64_t local, int chunk) {
  const std::size_t scatter = scatter_smem_bytes(threads, local, chunk), scan = scan_smem_bytes(local);
  return scatter > scan ? scatter : scan;
}
// One CTA does everything: fine while a single SM can walk the slots quickly.
inline constexpr std::int64_t kSingleMaxSlots = 32768;
// The multi-CTA aligner's per-(expert, CTA) count table.
inline std::size_t multi_workspace_bytes(std::int64_t slots, std::int64_t local, int chunk) {
  return static_cast<std::size_t>(local * ((slots + chunk - 1) / chunk)) * 4;
}

// Throw moe::Error on a launch failure or an uninstantiated config.
void align_single(const AlignArgs& a, int threads, void* stream);
void align_multi(const AlignArgs& a, int threads, int chunk, void* workspace, std::size_t workspace_bytes,
                 void* stream);

struct GatherArgs {
  const void* x = nullptr;             // [T, row_bytes]
  const std::int32_t* src = nullptr;   // [rows]
  void* x_sorted = nullptr;            // [rows, row_bytes]
  std::int64_t rows = 0, slots = 0;    // src values outside [0, slots) give zero rows
  int K = 1;
  std::int64_t row_bytes = 0;
  // offsets[local] on the device (optional): the rows in use. The layer sizes x_sorted for the
  // worst case (only the device knows R), so rows from there on are left alone rather than
  // zeroed; nothing reads them (gmm's tiles come from the offsets, combine goes through dst).
  const std::int32_t* used_rows = nullptr;
  // fp8 (DESIGN.md 1.6): x is bf16 and x_sorted gets e4m3 codes plus these [rows, D/128] scales.
  float* x_scale = nullptr;
  bool ue8m0 = false;
};

inline constexpr int kGatherThreads[] = {128, 256, 512};
inline constexpr int kGatherVec[] = {16, 8, 4, 2};  // bytes per load/store
inline constexpr int kGatherUnroll[] = {1, 4};
inline constexpr int kGatherRows[] = {1, 2, 4};  // rows (row order) or tokens (token order) per CTA

// order 0, by row: each x_sorted row reads its token's x row (x is read once per routed slot).
// order 1, by token: each token reads its x row once and writes it to its K rows (dst), and
// the grid's tail zeroes the padding rows; reads x once in all, which pays off when x
// outgrows the L2.
struct ScatterArgs {
  const std::int32_t* dst = nullptr;  // [T*K]
  std::int64_t T = 0;
};
void gather(const GatherArgs& a, const ScatterArgs& by_token, int order, int threads, int rows_per_cta, int vec,
            int unroll, void* stream);

// The kernels' launchers, as the host half of a run (run_dispatch, cuda.cpp) calls them: the
// GPU's above, or the emulator's (emu.cpp).
// fp8's quantizing gather (cuda_gather_fp8_kernels.cuh): row order, 16-byte accesses; only
// the block size is a choice.
inline constexpr int kQuantGatherThreads[] = {128, 256, 512};
void gather_fp8(const GatherArgs& a, int threads, void* stream);

struct Launchers {
  decltype(&align_single) one_cta_aligner;
  decltype(&align_multi) multi_cta_aligner;
  decltype(&gather) gatherer;
  decltype(&gather_fp8) quant_gatherer;
};

}  // namespace moe::dispatch_cuda
