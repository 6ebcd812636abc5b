#pragma once
// Host-side interface of the combine CUDA kernels (cuda_kernel.cuh, instantiated per input
// dtype in cuda_{bf16,f16,f32}.cu), free of CUDA headers.
#include <cstdint>

namespace moe::combine_cuda {

struct Args {
  const void* y = nullptr;             // y_sorted [rows, D] or y [T*K, D]
  const std::int32_t* dst = nullptr;   // ragged: [T*K]; null for dense (row = t*K + j)
  const float* w = nullptr;            // [T*K]
  const void* residual = nullptr;      // rmsnorm: [T, D]
  const void* gamma = nullptr;         // rmsnorm: [D]
  void* out = nullptr;                 // [T, D], dtype or f32
  void* residual_out = nullptr;        // rmsnorm: [T, D]
  std::int64_t T = 0, D = 0, rows = 0;  // rows of y: dst values outside [0, rows) are skipped
  int K = 1;
  float eps = 1e-6f;
};

struct Config {
  int threads = 256;         // per CTA
  int tokens_per_cta = 1;    // threads/tokens_per_cta (>= 32) work on each token
  int vec = 16;              // bytes of y per load
};

inline constexpr int kThreads[] = {128, 256, 512};
inline constexpr int kTokensPerCta[] = {1, 2, 4, 8};
inline constexpr int kVec[] = {16, 8, 4, 2};

// Launch for one input dtype; throw moe::Error for an uninstantiated config or a launch failure.
void run_bf16(const Args& a, bool out_f32, bool rmsnorm, const Config& c, void* stream);
void run_f16(const Args& a, bool out_f32, bool rmsnorm, const Config& c, void* stream);
void run_f32(const Args& a, bool rmsnorm, const Config& c, void* stream);

// The launchers the host half of a run (run_combine, cuda.cpp) calls: the GPU's above, or the
// emulator's (emu.cpp).
struct Launchers {
  decltype(&run_bf16) bf16;
  decltype(&run_f16) f16;
  decltype(&run_f32) f32;
};

}  // namespace moe::combine_cuda
