#pragma once
// NVIDIA's libraries as gmm kernels of the cuda backend, validated and timed in the same harness
// as moebench's own: kernel=cublas (cuBLAS's grouped GEMM, bf16/f16) and kernel=cublaslt
// (cuBLASLt's block-scaled fp8 matmul, one call per local expert), each followed by moebench's
// epilogue (silu*up, the fp8 requantization of h, the routed weight). Plain C++ (no CUDA or
// cuBLAS types), so the backend description and the cpu tests include it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/host_wait.hpp"
#include "gmm/spec.hpp"
#include "moe/family.hpp"

namespace moe::gmm::cublas {

enum class Kind { none, cublas, cublaslt };

// kernel=cublas | kernel=cublaslt; none for moebench's own kernels (mma, wgmma).
Kind kind_of(const Params& config);
// The library a config runs ("cuBLAS", "cuBLASLt"), empty for moebench's own (BackendImpl::peer).
std::string peer(const Params& config);

// kernel=cublaslt, stage=down: what cuBLASLt writes. f32: fp32 rows that moebench's epilogue
// multiplies by the routed weight and rounds once to bf16; bf16: y_sorted directly (scaled in
// place when routed, so rounded twice). Up always writes fp32 gate|up (h_scale is taken from the
// unrounded sums, as on the wgmma path).
struct Config {
  Kind kind = Kind::cublas;
  bool lt_f32 = true;
};

// Adds cublas and cublaslt to the `kernel` parameter's choices and the one parameter of ours.
void add_config_params(std::vector<ParamSpec>& specs);
Config parse_config(const Params& config);
Params config_params(const Config& c);
// A parameter of the other kernels set away from its default on a library config, or lt_out on
// one of ours: one clear reason (empty: none).
std::string foreign_params(const std::vector<ParamSpec>& specs, const Params& config);
std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev);
// The curated space has one config per library where it can run; `full` adds lt_out's other value.
std::vector<Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full);

// Where each part of the workspace starts (bytes from its base), sized for the most rows.
struct Layout {
  std::size_t pointers = 0;    // cublas: the grouped GEMM's A, B and C pointer arrays (device)
  std::size_t gate_up = 0;     // up: gate|up rows (cublas 16-bit, cublaslt fp32); cublaslt f32 down: y
  std::size_t act_scales = 0;  // cublaslt: the activation scales, each expert's block M-major
  std::size_t w_scales = 0;    // cublaslt: weight scales repacked where K/128 is not a multiple of 4
  std::size_t lt = 0;          // cublaslt: cuBLASLt's own workspace
  std::size_t lt_bytes = 0;
  std::size_t total = 0;
};
Layout layout(const GmmSpec& s, const Config& c);
inline constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;  // what NVIDIA suggests for Hopper

// cuBLASLt's VEC128 mode reads an operand's scales outer-dimension-major: for an expert of n
// rows, a [K/128][n] block (the rows contiguous), where moebench keeps x_scale/h_scale [R,K/128]
// K-major. The scale-layout kernel writes expert e's block at this float offset of the
// workspace: past every earlier expert's block, on 16 bytes (each block starts on 4 floats).
constexpr long long act_scale_base(long long begin_row, long long k_groups, long long expert) {
  return (begin_row * k_groups + 3) / 4 * 4 + 4 * expert;
}
// cuBLASLt's 128x128 mode reads each 128-row block's K/128 scales with a row stride of a
// multiple of 4 floats (16 bytes): w13_scale/w2_scale are used as they are where K/128 is a
// multiple of 4, and repacked into the workspace by the same kernel otherwise.
inline bool weight_scales_repacked(const GmmSpec& s) { return s.k_groups() % 4 != 0; }
inline std::int64_t padded_k_groups(const GmmSpec& s) { return (s.k_groups() + 3) / 4 * 4; }

// The offsets as the host reads them back: each must rise from 0 to at most `rows`. A broken
// entry is an Error naming it (the device kernels clamp; a host loop must not index past).
void check_host_offsets(const std::int32_t* offsets, std::int64_t experts, std::int64_t rows);

// One group per local expert with rows: its index and rows [begin, begin + rows).
struct Group {
  int expert = 0;
  std::int64_t begin = 0, rows = 0;
};
std::vector<Group> groups(const std::int32_t* offsets, std::int64_t experts);

// The arguments cublasGemmGroupedBatchedEx takes for `gs` (group_size 1 each), column-major as
// cuBLAS counts: C^T[n_w, rows] = W_e (op T, [K, n_w] with ld K) * act_e^T ([K, rows], ld K), i.e.
// row-major out[rows, n_w] = act_e * W_e^T. m, n, k and the leading dimensions are host arrays;
// a, b, c are device addresses, which go to the device as the pointer arrays.
struct GroupedArgs {
  std::vector<int> m, n, k, lda, ldb, ldc;
  std::vector<std::uintptr_t> a, b, c;
};
GroupedArgs grouped_args(const GmmSpec& s, const std::vector<Group>& gs, std::uintptr_t act, std::uintptr_t weight,
                         std::uintptr_t out, std::size_t in_bytes, std::size_t out_bytes);

// The cuda backend's plan of a library config (run.cpp): its calls wait on the host.
struct PlanState;
struct Plan : LaunchPlan, HostWait {
  GmmSpec spec;
  Config config;
  std::shared_ptr<PlanState> state;
};
std::shared_ptr<const Plan> plan(const GmmSpec& s, const Config& c, std::int64_t rows);
void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t workspace_bytes, void* stream, const Plan* planned = nullptr);

}  // namespace moe::gmm::cublas
