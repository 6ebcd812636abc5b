// combine kernels for f16 inputs (out f16 or f32).
#include "combine/cuda_launch.cuh"

namespace moe::combine_cuda {

void run_f16(const Args& a, bool out_f32, bool rmsnorm, const Config& c, void* stream) {
  if (out_f32)
    detail::launch_epilogue<__half, float>(a, rmsnorm, c, stream);
  else
    detail::launch_epilogue<__half, __half>(a, rmsnorm, c, stream);
}

}  // namespace moe::combine_cuda
