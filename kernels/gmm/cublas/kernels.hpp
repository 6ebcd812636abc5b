#pragma once
// Launchers of the library kernels' own small kernels (epilogue.cu, from epilogue_kernels.cuh).
// Each is programmatically launched, waits for its predecessor before reading, and leaves rows
// past offsets[E] alone.
#include <cstdint>

namespace moe::gmm::cublas {

struct RowsLaunch {
  std::uint16_t* y = nullptr;
  const float* f32 = nullptr;
  const float* row_weight = nullptr;
  const std::int32_t* offsets = nullptr;
  int rows = 0, cols = 0, experts = 0;
};
// y *= row_weight per row, in place (bf16 or f16).
void launch_scale_rows(const RowsLaunch& a, bool bf16, void* stream);
// bf16 y = f32 (* row_weight when given), rounded once.
void launch_round_rows(const RowsLaunch& a, void* stream);

struct ScaleLayoutLaunch {
  const float* act_scale = nullptr;
  float* act_out = nullptr;
  const float* w_scale = nullptr;
  float* w_out = nullptr;  // null: the weight scales are used as they are
  const std::int32_t* offsets = nullptr;
  int rows = 0, kb = 0, experts = 0, nb = 0, kb_pad = 0;
};
void launch_scale_layout(const ScaleLayoutLaunch& a, void* stream);

}  // namespace moe::gmm::cublas
