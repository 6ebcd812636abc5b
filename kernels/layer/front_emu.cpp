// The decode front kernel under the SIMT emulator: front_kernels.cuh built as host code, with
// the grid and shared memory cuda_front.cu launches.
#include "emu/simt_cuda.hpp"  // first: the kernel headers compile against its CUDA names

#include <array>
#include <string>
#include <utility>

#include "common/emu_backend.hpp"
#include "layer/front_kernels.cuh"
#include "moe/error.hpp"
#include "router/emu_lane.hpp"

namespace moe::layer_front {

namespace {

template <int I>
void body(const Args& a) {
  constexpr router::KernelShape s = kShapes[I];
  MOE_DYNAMIC_SMEM(int, smem);
  router::EmuLane ln;
  front_body<s.lanes, s.epl, s.vec>(a, ln, smem);
}

using Body = void (*)(const Args&);
template <int... Is>
constexpr std::array<Body, sizeof...(Is)> make_table(std::integer_sequence<int, Is...>) {
  return {&body<Is>...};
}
constexpr auto kBodies = make_table(std::make_integer_sequence<int, kShapeCount>{});

}  // namespace

void launch_emu(const Args& a, int shape, int ctas, void*) {
  if (shape < 0 || shape >= kShapeCount) throw Error("decode front emu: no row shape " + std::to_string(shape));
  const Body b = kBodies[static_cast<std::size_t>(shape)];
  emu_launch("decode front kernel", ctas, kThreads, smem_bytes(a.local, a.route.T * a.K), [&] { b(a); });
}

}  // namespace moe::layer_front
