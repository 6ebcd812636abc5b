// combine kernels for f32 inputs (out is f32 either way).
#include "combine/cuda_launch.cuh"

namespace moe::combine_cuda {

void run_f32(const Args& a, bool rmsnorm, const Config& c, void* stream) {
  detail::launch_epilogue<float, float>(a, rmsnorm, c, stream);
}

}  // namespace moe::combine_cuda
