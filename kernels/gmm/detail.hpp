#pragma once
// The gmm family's parts, wired together in family.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "gmm/spec.hpp"
#include "moe/family.hpp"

namespace moe::gmm {

std::vector<ParamSpec> problem_params();
std::vector<TensorSpec> input_specs(const GmmSpec& s);
std::vector<TensorSpec> output_specs(const GmmSpec& s, std::int64_t rows);
// Rows after dispatch, as the inputs say (offsets first, then the activations).
std::int64_t input_rows(const GmmSpec& s, const TensorMap& in);

// inputs.cpp: routing -> padded offsets -> random activations (zero padding rows) and weights.
void make_inputs(const GmmSpec& s, const InputOptions& opt, TensorMap& in);
// fp8_inputs.cpp: codes and scales (DESIGN.md 1.6); `pad` marks the all-zero padding rows.
void make_fp8_activations(const GmmSpec& s, std::int64_t rows, const std::vector<char>& pad, std::uint64_t seed,
                          TensorMap& in);
void make_fp8_weights(const GmmSpec& s, std::uint64_t seed, TensorMap& in);
// Offsets must start at 0, never decrease and end at `rows`: an Error saying which entry is off.
void check_offsets(const GmmSpec& s, const Tensor& offsets, std::int64_t rows);
// What a call on host memory (cpu, emu) checks before trusting a caller's offsets: they rise
// from 0 to at most the activations' rows. Overlapping segments would have two threads write one
// row; on a device the schedule kernel clamps them and flags it (cuda_tile_map.cuh).
void check_host_offsets(const std::int32_t* offsets, std::int64_t n, std::int64_t rows);

// Padding rows are the all-zero rows of the activations: dispatch writes zeros there, and a
// zero row gives an exactly zero output row in any arithmetic, so they must come out 0.
std::vector<char> zero_rows(const Tensor& act);

// reference.cpp. Large problems compute a deterministic sample of rows (the others hold NaN:
// not computed); validate compares those rows and checks every row for NaN, poison and padding.
// `every_row` computes all rows whatever the size (the layer's reference needs whole outputs).
std::vector<std::int64_t> reference_rows(const GmmSpec& s, const TensorMap& in, bool* all_rows, bool every_row = false);
void reference(const GmmSpec& s, const TensorMap& in, TensorMap& out, bool every_row = false);

// validate.cpp. The sampled rows must be within rel_l2_tolerance(dtype) in relative L2 and,
// per element, within elem_rtol(dtype) * (|ref| + rms of the reference rows).
double elem_rtol(DType t);
Validation validate(const GmmSpec& s, const TensorMap& in, const TensorMap& got, const TensorMap& ref);
Cost cost(const GmmSpec& s, const TensorMap& in);
// cost() before the inputs exist, routing taken as uniform.
Cost estimate(const GmmSpec& s);

// fp8.cpp: the block-scaled reference (fp64 on the dequantized values, h requantized as the
// design says) and the check of a quantized h (the bounds below).
void reference_fp8(const GmmSpec& s, const TensorMap& in, TensorMap& out, const std::vector<std::int64_t>& rows);
Validation validate_fp8_up(const GmmSpec& s, const TensorMap& in, const TensorMap& got, const TensorMap& ref);
// h comes out of K-long sums on the device and fp64 ones in the reference. Hopper's fp8 wgmma
// keeps only about 14 mantissa bits while it sums a 128-wide K block, before CUTLASS promotes
// the block into fp32 (measured on an H200: gate/up errors near 2^-12 of their values, up to
// 1e-4 of a group's range at K=7168). So h_scale may differ by 2^-9 relative (ue8m0 scales by
// at most one power of two), and a code more than one step off passes when its value is within
// 2^-11 of its group's range (small elements, where that absolute error spans several steps).
inline constexpr double kHScaleRtol = 1.0 / 512;
inline constexpr double kHRangeAtol = 1.0 / 2048;
// fp8_cpu.cpp: the cpu backend's fp8 path, fp32 sums per 128 block scaled into fp32 accumulators.
void run_fp8_cpu(const GmmSpec& s, std::int64_t block_m, const RefMap& in, const RefMap& out, int threads);

// w4.cpp: the 4-bit formats (docs/w4.md). Their weight tensors (codes, scales, int4's zero
// points), the check of given weights (no NaN scale), random weights quantized to the format,
// and, for the reference, expert e's weight row n dequantized exactly by common/w4_reference.
std::vector<TensorSpec> w4_weight_specs(const GmmSpec& s);
void check_w4_weights(const GmmSpec& s, const TensorMap& in);
void make_w4_weights(const GmmSpec& s, std::uint64_t seed, TensorMap& in);
void w4_dequant_row(const GmmSpec& s, const TensorMap& in, std::int64_t e, std::int64_t n, double* out);
// w4_cpu.cpp: the cpu backend's own dequantizer, one weight row (e * n_w + n) to fp32, exactly,
// zero-padded from K to k_pad.
struct W4Rows {
  WeightFormat wq = WeightFormat::dense;
  std::int64_t K = 0, NW = 0, group = 0;
  const void* codes = nullptr;      // mxfp4: u8 [rows, K/2]; int4: i32 [rows, K/8]
  const void* scales = nullptr;     // mxfp4: e8m0 u8 [rows, K/32]; int4: bf16 [rows, K/group]
  const std::int32_t* zeros = nullptr;  // int4 with zero points: [E, NW/8, K/group]
};
W4Rows w4_rows(const GmmSpec& s, const RefMap& in);
void w4_row_to_f32(const W4Rows& w, std::int64_t row, std::int64_t k_pad, float* dst);

// 4-bit weights run on kernel=mma only (the 4-bit decode kernel): the reason another kernel is
// refused (empty for kernel=mma), and the same as an Error for a run or plan.
std::string w4_kernel_invalid(const GmmSpec& s, const Params& config);
void require_w4_kernel(const GmmSpec& s, const Params& config);

BackendImpl cpu_backend();
BackendImpl cuda_backend();
// Why the engines' kernels moebench drives cannot run this stage's expert function; "" for the
// split silu*up without biases, the one they compute.
std::string expert_fn_invalid_reason(const GmmSpec& s);
// The same for the cuda backend's config: kernel=wgmma and the library peers (kernel=cublas,
// cublaslt) compute the plain function only; kernel=mma computes every one (expert_fn.cuh; its
// own invalid_reason says which shapes have it). "" when the config's kernel computes it.
std::string expert_fn_kernel_invalid(const GmmSpec& s, const Params& config);

// Multiply-adds above which the reference samples rows (fp64 loops on a few cores).
inline constexpr double kReferenceFullMacs = 1.5e9;
inline constexpr std::int64_t kReferenceMinRows = 48;

}  // namespace moe::gmm
