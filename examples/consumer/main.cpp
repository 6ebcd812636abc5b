// Runs one MoE layer the way an engine would: Qwen3-30B-A3B's MoE shape (the qwen3-30b-a3b
// preset: 128 experts, top-8 softmax routing, hidden 2048, expert intermediate 768) served with
// tensor parallelism 4, configs "auto" (runtime dispatch from the tuned tables), on the cuda
// backend when a GPU is visible, else the cpu backend.
//   consumer [tokens]      prints the router's table choice and a checksum of the layer output
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/moe.hpp"

namespace {

// Device memory for the cuda backend (host memory is used as is on the cpu backend).
struct DeviceCopy {
  void* ptr = nullptr;
  DeviceCopy(const void* host, std::size_t bytes) {
    if (cudaMalloc(&ptr, bytes) != cudaSuccess || cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
      throw moe::Error("cannot copy " + std::to_string(bytes) + " bytes to the GPU");
  }
  ~DeviceCopy() { cudaFree(ptr); }
};

}  // namespace

int main(int argc, char** argv) try {
  const std::int64_t T = argc > 1 ? std::atoll(argv[1]) : 16;
  const std::int64_t E = 128, k = 8, D = 2048, tp = 4, I = 768 / tp;
  const moe::Params shape{{"experts", E}, {"topk", k}, {"scoring", std::string("softmax")}, {"renormalize", std::int64_t{1}},
                          {"hidden", D}, {"intermediate", I}, {"dtype", std::string("bf16")}};
  moe::KernelOptions opt;
  const bool gpu = moe::cuda_device_count() > 0;
  opt.backend = gpu ? moe::Backend::cuda : moe::Backend::cpu;
  std::printf("backend: %s\n", gpu ? "cuda (device 0)" : "cpu (no GPU visible)");

  // The router alone, to show which table (and entry) runtime dispatch picked for it.
  const moe::Params router_shape{{"experts", E}, {"topk", k}, {"scoring", std::string("softmax")},
                                 {"renormalize", std::int64_t{1}}, {"dtype", std::string("bf16")}};
  const moe::Kernel router("router", router_shape, opt);
  std::printf("%s\n", router.describe(T).c_str());

  const moe::Kernel layer("moe-layer", shape, opt);
  std::vector<std::uint16_t> logits(T * E), x(T * D), w13(E * 2 * I * D), w2(E * D * I), out(T * D, 0xFFFF);
  std::uint32_t seed = 12345;
  auto rnd = [&] { return (seed = seed * 1664525u + 1013904223u) / 4294967296.0f - 0.5f; };
  for (auto& v : logits) v = moe::float_to_bf16(4 * rnd());
  for (auto* buf : {&x, &w13, &w2})
    for (auto& v : *buf) v = moe::float_to_bf16(rnd() * 0.1f);
  std::vector<std::byte> ws(layer.workspace_bytes(T));

  using moe::DType;
  const auto bytes = [](const auto& v) { return v.size() * sizeof(v[0]); };
  if (gpu) {
    const DeviceCopy d_logits(logits.data(), bytes(logits)), d_x(x.data(), bytes(x)), d_w13(w13.data(), bytes(w13)),
        d_w2(w2.data(), bytes(w2)), d_out(out.data(), bytes(out)), d_ws(ws.data(), ws.size());
    moe::moe_layer(layer, {d_logits.ptr, DType::bf16, {T, E}}, nullptr, {d_x.ptr, DType::bf16, {T, D}},
                   {d_w13.ptr, DType::bf16, {E, 2 * I, D}}, {d_w2.ptr, DType::bf16, {E, D, I}},
                   {d_out.ptr, DType::bf16, {T, D}}, nullptr, d_ws.ptr, ws.size());
    if (cudaMemcpy(out.data(), d_out.ptr, bytes(out), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw moe::Error("cannot copy the layer's output back from the GPU");
  } else {
    moe::moe_layer(layer, {logits.data(), DType::bf16, {T, E}}, nullptr, {x.data(), DType::bf16, {T, D}},
                   {w13.data(), DType::bf16, {E, 2 * I, D}}, {w2.data(), DType::bf16, {E, D, I}},
                   {out.data(), DType::bf16, {T, D}}, nullptr, ws.data(), ws.size());
  }
  double sum = 0;
  for (auto v : out) {
    const float f = moe::bf16_to_float(v);
    if (!std::isfinite(f)) {
      std::fprintf(stderr, "consumer: non-finite output\n");
      return 1;
    }
    sum += std::fabs(f);
  }
  std::printf("moe-layer T=%lld: mean |out| = %.6f\n", static_cast<long long>(T), sum / out.size());
  return 0;
} catch (const moe::Error& e) {
  std::fprintf(stderr, "consumer: %s\n", e.what());
  return 2;
}
