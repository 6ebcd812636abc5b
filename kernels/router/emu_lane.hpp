#pragma once
// cuda_kernels.cuh's DeviceLane on the emulator's intrinsics: the Lane interface of
// cuda_row.hpp for a row routed under the SIMT emulator (the router's and the decode front's).
// Include emu/simt_cuda.hpp first.
namespace moe::router {

struct EmuLane {
  int lane() const { return simt::lane(); }
  unsigned xor_u(unsigned v, int off) const { return __shfl_xor_sync(0xffffffffu, v, off); }
  float xor_f(float v, int off) const { return __shfl_xor_sync(0xffffffffu, v, off); }
  unsigned idx_u(unsigned v, int src, int width) const { return __shfl_sync(0xffffffffu, v, src, width); }
  unsigned max_u(unsigned v) const { return __reduce_max_sync(0xffffffffu, v); }
  unsigned min_u(unsigned v) const { return __reduce_min_sync(0xffffffffu, v); }
  void sync() const { __syncwarp(); }
};

}  // namespace moe::router
