// The decode front kernel on a GPU (front_kernels.cuh): one instantiation per front row shape.
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "layer/front_kernels.cuh"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"
#include "router/cuda_kernels.cuh"

namespace moe::layer_front {

namespace {

template <int LANES, int EPL, int V>
__global__ void __launch_bounds__(kThreads) front_kernel(const Args a) {
  MOE_DYNAMIC_SMEM(int, smem);
  router::kern::DeviceLane ln;
  front_body<LANES, EPL, V>(a, ln, smem);
}

template <int I>
const void* kernel_of() {
  constexpr router::KernelShape s = kShapes[I];
  return reinterpret_cast<const void*>(&front_kernel<s.lanes, s.epl, s.vec>);
}

template <int... Is>
const void* find(int shape, std::integer_sequence<int, Is...>) {
  const void* k = nullptr;
  ((k = shape == Is ? kernel_of<Is>() : k), ...);
  return k;
}

}  // namespace

void launch_cuda(const Args& a, int shape, int ctas, void* stream) {
  const void* k = find(shape, std::make_integer_sequence<int, kShapeCount>{});
  if (!k) throw Error("decode front: no kernel is compiled for row shape " + std::to_string(shape));
  const std::size_t smem = smem_bytes(a.local, a.route.T * a.K);
  if (smem > 48 * 1024) kernel_facts(k, kThreads, smem);  // the shared-memory opt-in, once per size
  Args by_value = a;
  launch_kernel_args(k, static_cast<unsigned>(ctas), kThreads, smem, static_cast<cudaStream_t>(stream), by_value);
}

}  // namespace moe::layer_front
