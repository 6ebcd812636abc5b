// combine kernels for bf16 inputs (out bf16 or f32).
#include "combine/cuda_launch.cuh"

namespace moe::combine_cuda {

void run_bf16(const Args& a, bool out_f32, bool rmsnorm, const Config& c, void* stream) {
  if (out_f32)
    detail::launch_epilogue<__nv_bfloat16, float>(a, rmsnorm, c, stream);
  else
    detail::launch_epilogue<__nv_bfloat16, __nv_bfloat16>(a, rmsnorm, c, stream);
}

}  // namespace moe::combine_cuda
