#pragma once
// The 4-bit decode kernel of the cuda backend (kernel=mma, dtype mxfp4 or int4): its tile
// shapes, arguments and how the host plans, checks and launches it. Plain C++ (no CUDA types),
// so the backend description, the emu backend and the tests include it. The device code is
// w4_mma_kernel.cuh.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmm/mma/cuda_configs.hpp"
#include "gmm/mma/kind_plan.hpp"

namespace moe::gmm::w4_mma {

// Shared rows: an activation row of block_k bf16 and a weight row of block_k/2 packed bytes,
// each padded so that a warp's fragment loads (8 rows by 4 lanes) meet distinct banks.
constexpr int a_row_bytes(int bk) { return bk * 2 + 16; }
constexpr int b_row_bytes(int bk) { return bk / 2 + (bk == 32 ? 32 : 16); }

inline std::size_t smem_bytes(const cuda::TileShape& t) {
  return static_cast<std::size_t>(t.stages) *
         (static_cast<std::size_t>(t.bm) * a_row_bytes(t.bk) + static_cast<std::size_t>(t.bn) * b_row_bytes(t.bk));
}

// The kernel's arguments: the bf16 kernel's shape and segment fields (act: the bf16 rows; so
// its tile map and split-K finalize are shared), plus the packed weights and their scales.
struct Args {
  cuda::KernelArgs b;
  const std::uint8_t* weight = nullptr;  // [experts, n_w, K/2] bytes (int4's int32 words read as bytes)
  const void* scale = nullptr;           // [experts, n_w, K/group]: e8m0 bytes (mxfp4) or bf16 (int4)
  const std::uint32_t* zeros = nullptr;  // int4 with zero points: [experts, n_w/8, K/group], else null
  std::uint32_t expert_bytes = 0;        // n_w * K/2: one expert's codes
  int groups = 0;                        // K / group: scales per weight row
  int group_mask = 0;                    // group/32 - 1: k32 chunks of a group, less one
};

// The instantiated shapes, in a fixed order (every one has an up and a down kernel per format).
std::vector<cuda::TileShape> tiles();

std::string invalid_reason(const GmmSpec& s, const cuda::Config& c, const DeviceInfo& dev);
// The tile map, the pad-row flags (a biased stage), then split-K's fp32 partials.
std::size_t workspace_bytes(const GmmSpec& s, const cuda::Config& c);
// The curated (full=false) or whole space of valid configs, and the default.
std::vector<cuda::Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full);
cuda::Config default_config(const GmmSpec& s, const DeviceInfo& dev);
// The shape fields for `rows` (Error when invalid) and the call's pointers.
Args plan_args(const GmmSpec& s, const cuda::Config& c, std::int64_t rows);
void bind_tensors(Args& a, const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out,
                  void* workspace, std::size_t workspace_bytes);

// The kernels one call launches: the schedule kernel, the pad-row pass (a biased stage), the
// main kernel, split-K's finalize.
using Plan = cuda::KindPlan<Args>;
std::shared_ptr<const Plan> plan(const GmmSpec& s, const cuda::Config& c, std::int64_t rows);
void run(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, const Plan* planned = nullptr);

// Per instantiation: plans the main kernel, plain (w4_mma_tiles.cu) or computing the problem's
// expert function (FN, w4_mma_tiles_fn.cu).
template <bool FN>
cuda::PlannedLaunch plan_main_of(const cuda::TileShape& t, bool down, bool mxfp4, const Args& a);
// Launches one planned kernel of this kind with `a`.
void launch(const cuda::PlannedLaunch& p, const Args& a, void* stream);

}  // namespace moe::gmm::w4_mma
