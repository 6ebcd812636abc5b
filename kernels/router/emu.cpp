// The router's emulated instantiation: every compiled kernel shape (cuda_shapes.hpp) built as
// host code over the emulator's CUDA names, in this one translation unit.
#include "emu/simt_cuda.hpp"  // first: cuda_row.hpp compiles against its CUDA names

#include "router/emu.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "common/emu_backend.hpp"
#include "moe/error.hpp"
#include "router/cuda_row.hpp"
#include "router/cuda_shapes.hpp"
#include "router/emu_lane.hpp"

namespace moe::router {

namespace {

// cuda_kernels.cuh's router_kernel body for kShapes[I].
template <int I>
void kernel_body(const kern::Args& a) {
  constexpr KernelShape s = kShapes[I];
  EmuLane ln;
  const long long warp = (simt::block() * simt::block_dim() + simt::thread()) >> 5;
  const long long nwarps = (simt::grid() * simt::block_dim()) >> 5;
  kern::RowKernel<s.lanes, s.epl, s.vec, s.esize>::rows(a, ln, warp, nwarps);
}

using Body = void (*)(const kern::Args&);
template <int... Is>
constexpr std::array<Body, sizeof...(Is)> make_table(std::integer_sequence<int, Is...>) {
  return {&kernel_body<Is>...};
}
constexpr auto kBodies = make_table(std::make_integer_sequence<int, kShapeCount>{});

}  // namespace

void router_emu(const RouterSpec& spec, const CudaConfig& c, const kern::Args& a, long long max_ctas) {
  const std::string why = cuda_invalid_reason(spec, c);
  if (!why.empty()) throw Error("router emu: config " + c.params().str() + " cannot route " + spec.str() + ": " + why);
  if (spec.tokens <= 0) return;
  const int shape = cuda_shape_index(spec, c);
  const long long rows_per_cta = static_cast<long long>(c.warps) * (32 / c.lanes);
  const long long ctas = (spec.tokens + rows_per_cta - 1) / rows_per_cta;
  const long long grid = std::min(ctas, max_ctas > 0 ? max_ctas : emu_device_info().sm_count);
  const Body body = kBodies[static_cast<std::size_t>(shape)];
  emu_launch("router kernel", grid, c.warps * 32, 0, [&] { body(a); });
}

// Measured on a development machine (one core): see --help and docs/commands/run.md.
constexpr EmuSpeed kSpeed{1e5, 0};

BackendImpl emu_backend() {
  return emu_backend_over(cuda_backend(), kSpeed, [](const Params& problem, const Params& config, const RefMap& in,
                                             const RefMap& out, const LaunchContext&) {
    const RouterSpec sp = RouterSpec::from(problem);
    const CudaConfig c = CudaConfig::from(config);
    const float* bias = sp.bias ? need(in, "bias").as<const float>() : nullptr;
    router_emu(sp, c,
               make_kernel_args(sp, c, need(in, "logits").data, bias, need(out, "weights").as<float>(),
                                need(out, "ids").as<std::int32_t>()));
  });
}

}  // namespace moe::router
