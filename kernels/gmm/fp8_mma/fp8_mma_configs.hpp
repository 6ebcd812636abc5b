#pragma once
// The fp8 decode kernel of the cuda backend (kernel=mma, dtype=fp8): its tile shapes, arguments
// and how the host plans, checks and launches it. Plain C++ (no CUDA types), so the backend
// description, the emu backend and the tests include it. The device code is fp8_mma_kernel.cuh.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmm/mma/cuda_configs.hpp"
#include "gmm/mma/kind_plan.hpp"

namespace moe::gmm::fp8_mma {

// K is walked in slices of one scale block: every slice's partial sums take one x_scale *
// w_scale promotion in fp32.
constexpr int kBlockK = 128;
// Shared rows are padded by 16 bytes: the 32-bit fragment loads of a warp (8 rows x 4 words)
// then fall into 32 distinct banks.
constexpr int kRowBytes = kBlockK + 16;

// up with block_n/2 == 128 h columns per CTA owns whole 1x128 groups of h: silu*up and the
// requantization run in the epilogue. Narrower tiles write gate|up in fp32 and a second pass
// (fp8_silu_quant_kernels.cuh) quantizes, reading those 8*I bytes per row back.
inline bool fused_up(const cuda::TileShape& t) { return t.bn / 2 == 128; }

// A stage's scales, copied with its slice: one x_scale per tile row, one w_scale per n8 tile.
inline int stage_scales(const cuda::TileShape& t) { return t.bm + t.bn / 8; }

inline std::size_t smem_bytes(const cuda::TileShape& t) {
  return static_cast<std::size_t>(t.stages) * static_cast<std::size_t>(t.bm + t.bn) * kRowBytes +
         static_cast<std::size_t>(t.stages) * static_cast<std::size_t>(stage_scales(t)) * 4 +
         static_cast<std::size_t>(t.bm) * static_cast<std::size_t>(t.warps_n) * 4 * 4;  // fused up: amax parts
}

// The kernel's arguments: the bf16 kernel's shape and segment fields (so its tile map and
// split-K finalize are shared), plus the e4m3 operands and their scales.
struct Args {
  cuda::KernelArgs b;                  // rows, dims, offsets, row_weight, out (down: bf16), partial
  const std::uint8_t* act = nullptr;   // [rows, K] e4m3
  const float* act_scale = nullptr;    // [rows, K/128]
  const std::uint8_t* weight = nullptr;  // [experts, n_w, K] e4m3
  const float* w_scale = nullptr;      // [experts, n_w/128, K/128]
  std::uint8_t* h = nullptr;           // fused up: [rows, I] e4m3
  float* h_scale = nullptr;            // fused up: [rows, I/128]
  std::uint32_t expert_bytes = 0;      // n_w * K: one expert's weights
  std::uint32_t up_bytes = 0;          // n_out * K: from a gate row to its up row
  bool ue8m0 = false;
};

// The instantiated shapes, in a fixed order (every one has an up and a down kernel).
std::vector<cuda::TileShape> tiles();

std::string invalid_reason(const GmmSpec& s, const cuda::Config& c, const DeviceInfo& dev);
// The tile map, then split-K's partials (down) or an unfused up's gate|up slabs (one per split).
std::size_t workspace_bytes(const GmmSpec& s, const cuda::Config& c);
// The curated (full=false) or whole space of valid configs, and the default.
std::vector<cuda::Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full);
cuda::Config default_config(const GmmSpec& s, const DeviceInfo& dev);
// The shape fields for `rows` (Error when invalid) and the call's pointers.
Args plan_args(const GmmSpec& s, const cuda::Config& c, std::int64_t rows);
void bind_tensors(Args& a, const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out,
                  void* workspace, std::size_t workspace_bytes);

// The kernels one call launches: the main kernel, then split-K's finalize (down) or the
// silu*up+quant pass (unfused up).
using Plan = cuda::KindPlan<Args>;
std::shared_ptr<const Plan> plan(const GmmSpec& s, const cuda::Config& c, std::int64_t rows);
void run(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, const Plan* planned = nullptr);

// Per instantiation (fp8_mma_tiles.cu): plans the main kernel, and the second passes.
cuda::PlannedLaunch plan_main(const cuda::TileShape& t, bool down, const Args& a);
cuda::PlannedLaunch plan_silu_quant(const Args& a);
// Launches one planned kernel of this family with `a`.
void launch(const cuda::PlannedLaunch& p, const Args& a, void* stream);

}  // namespace moe::gmm::fp8_mma
