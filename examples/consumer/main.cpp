// Runs one MoE layer the way an engine would: problem from the model's shape, configs "auto"
// (runtime dispatch from the tuned tables), on the GPU when there is one, else the cpu backend.
//   consumer [tokens]      prints each stage's chosen config and a checksum of the output
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/moe.hpp"

int main(int argc, char** argv) try {
  const std::int64_t T = argc > 1 ? std::atoll(argv[1]) : 16;
  const std::int64_t E = 16, k = 4, D = 64, I = 32;
  const moe::Params shape{{"experts", E}, {"topk", k}, {"scoring", std::string("softmax")}, {"hidden", D},
                          {"intermediate", I}, {"dtype", std::string("bf16")}};
  moe::KernelOptions opt;
  opt.backend = moe::cuda_device_count() > 0 ? moe::Backend::cuda : moe::Backend::cpu;
  if (opt.backend == moe::Backend::cuda) {
    std::puts("a GPU is visible: this example runs its host-memory path on the cpu backend only");
    opt.backend = moe::Backend::cpu;
  }
  // The router alone, to show which table entry runtime dispatch picked.
  moe::Params router_shape{{"experts", E}, {"topk", k}, {"scoring", std::string("softmax")}, {"dtype", std::string("bf16")}};
  const moe::Kernel router("router", router_shape, opt);
  std::printf("%s\n", router.describe(T).c_str());

  const moe::Kernel layer("moe-layer", shape, opt);
  std::vector<std::uint16_t> logits(T * E);
  std::vector<std::uint16_t> x(T * D), w13(E * 2 * I * D), w2(E * D * I), out(T * D, 0xFFFF);
  std::uint32_t seed = 12345;
  auto rnd = [&] { return (seed = seed * 1664525u + 1013904223u) / 4294967296.0f - 0.5f; };
  for (auto& v : logits) v = moe::float_to_bf16(4 * rnd());
  for (auto* buf : {&x, &w13, &w2})
    for (auto& v : *buf) v = moe::float_to_bf16(rnd() * 0.5f);
  using moe::DType;
  std::vector<std::byte> ws(layer.workspace_bytes(T));
  moe::moe_layer(layer, {logits.data(), DType::bf16, {T, E}}, nullptr, {x.data(), DType::bf16, {T, D}},
                 {w13.data(), DType::bf16, {E, 2 * I, D}}, {w2.data(), DType::bf16, {E, D, I}},
                 {out.data(), DType::bf16, {T, D}}, nullptr, ws.data(), ws.size());
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
