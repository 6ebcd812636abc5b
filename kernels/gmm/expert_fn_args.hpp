#pragma once
// The expert function (docs/design.md, gmm) as a device kernel reads it: the host fills these
// fields once per plan from the problem, the kernel's epilogue passes them to expert_fn.cuh.
// Plain C++ (no CUDA types): kernel argument structs embed it, and host code fills it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gmm/spec.hpp"

namespace moe::gmm {

struct ExpertFnArgs {
  // This stage's bias in the operands' dtype, [experts, bias_stride] (up: bias13 in w13's row
  // order; down: bias2), local expert e at e * bias_stride. Null: no bias.
  const std::uint16_t* bias = nullptr;
  // One byte per activation row, non-zero for an all-zero (padding) row: such a row's output
  // stays exactly zero, bias or not (gmm_pad_rows_kernel writes it). Set whenever `bias` is.
  const std::uint8_t* pad_rows = nullptr;
  int bias_stride = 0;
  // Up only. swiglu_oai: gate = min(gate, limit), up = clamp(up, -limit, limit),
  // h = (up + 1) * gate * sigmoid(alpha * gate); else h = silu(gate) * up.
  int swiglu_oai = 0;
  float alpha = 1.702f, limit = 7.0f;
  // Up only: gate column c's w13 row is c + (c & il_mask), its up row up_rows further on. Split
  // layout: il_mask 0, up_rows = I. Interleaved with block b (a power of two): il_mask = ~(b-1),
  // up_rows = b.
  int il_mask = 0;
  int up_rows = 0;
};

// The fields for problem `s` (pointers null: bind them per call). Call only when
// expert_fn_device_reason(s) is empty.
inline ExpertFnArgs expert_fn_args(const GmmSpec& s) {
  ExpertFnArgs f;
  f.bias_stride = static_cast<int>(s.down ? s.n_out() : s.n_w());
  if (!s.down) {
    f.swiglu_oai = s.swiglu_oai ? 1 : 0;
    f.alpha = static_cast<float>(s.alpha);
    f.limit = static_cast<float>(s.limit);
    f.il_mask = s.interleaved ? ~static_cast<int>(s.w13_block - 1) : 0;
    f.up_rows = static_cast<int>(s.interleaved ? s.w13_block : s.intermediate);
  }
  return f;
}

// Why the device form above cannot express `s`'s expert function ("" when it can): the
// interleaved row map is a mask, so the block must be a power of two.
inline std::string expert_fn_device_reason(const GmmSpec& s) {
  if (!s.down && s.interleaved && (s.w13_block & (s.w13_block - 1)) != 0)
    return "w13_layout=interleaved with w13_block=" + std::to_string(s.w13_block) +
           ": the cuda kernels map interleaved rows with a mask, so the block must be a power of two; "
           "re-lay w13 with moe::prepare_weights or use --backend cpu";
  return {};
}

// Bytes of the pad-row flags for `rows` rows, 16-byte aligned so what follows them stays so.
inline std::size_t pad_rows_bytes(std::int64_t rows) { return static_cast<std::size_t>((rows + 15) / 16 * 16); }

// The pad-row pass (gmm_pad_rows_kernel, expert_fn.cuh): act [rows, k_dim], k_dim a multiple of
// 8 and rows 16-byte aligned; a warp per row, kPadRowsWarps rows per block.
struct PadRowsArgs {
  const std::uint16_t* act = nullptr;
  std::uint8_t* pad = nullptr;  // [rows]
  int rows = 0, k_dim = 0;
};
constexpr int kPadRowsWarps = 8;
// Blocks for `rows` rows, capped at `max_blocks` (> 0) where the grid strides over the rest.
inline long long pad_rows_blocks(long long rows, long long max_blocks) {
  const long long b = (rows + kPadRowsWarps - 1) / kPadRowsWarps;
  return b < max_blocks ? b : max_blocks;
}
}  // namespace moe::gmm
