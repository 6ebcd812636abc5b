// The emu backend's harness path (tuner::run_emu, what `moebench run --backend emu` and the
// sweep's gate call) must fail a config whose emulated kernel is wrong: a planted bug in the
// kernel's arguments, and a kernel that deadlocks under the emulator.
#include <gtest/gtest.h>

#include "common/emu_backend.hpp"
#include "emu/simt_emulator.hpp"
#include "moe/family.hpp"
#include "router/emu.hpp"
#include "router/spec.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;

// The router family with its emu run replaced by `run`.
FamilyDesc router_with(decltype(BackendImpl::run) run) {
  FamilyDesc f = family("router");
  for (auto& b : f.backends)
    if (b.backend == Backend::emu) b.run = std::move(run);
  return f;
}

tuner::Prepared prepared(const FamilyDesc& f) {
  InputOptions o;
  o.seed = 3;
  const Params problem{{"tokens", std::int64_t{9}}, {"experts", std::int64_t{64}}, {"topk", std::int64_t{6}}};
  return tuner::prepare(f, problem, o);
}

TEST(EmuBackend, TheRealKernelPasses) {
  const FamilyDesc& f = family("router");
  const auto p = prepared(f);
  const Params c = f.need_backend(Backend::emu).default_config(p.problem, emu_device_info());
  const tuner::Outcome o = tuner::run_emu(p, c);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
}

TEST(EmuBackend, APlantedKernelBugFailsValidation) {
  // The kernel told to route one expert fewer than the problem's topk: slots stay unwritten.
  const FamilyDesc f = router_with([](const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
                                      const LaunchContext&) {
    const RouterSpec sp = RouterSpec::from(problem);
    const router::CudaConfig c = router::CudaConfig::from(config);
    const float* bias = sp.bias ? need(in, "bias").as<const float>() : nullptr;
    auto a = router::make_kernel_args(sp, c, need(in, "logits").data, bias, need(out, "weights").as<float>(),
                                      need(out, "ids").as<std::int32_t>());
    a.k -= 1;
    router::router_emu(sp, c, a);
  });
  const auto p = prepared(f);
  const tuner::Outcome o = tuner::run_emu(p, f.need_backend(Backend::emu).default_config(p.problem, emu_device_info()));
  EXPECT_FALSE(o.validation.ok);
}

TEST(EmuBackend, AKernelThatDeadlocksFailsSayingWhy) {
  // Lane 0 leaves before the barrier the others wait at.
  const FamilyDesc f = router_with([](const Params&, const Params&, const RefMap&, const RefMap&, const LaunchContext&) {
    emu_launch("planted_kernel", 1, 64, 0, [] {
      if (simt::thread() == 0) return;
      simt::sync_threads();
    });
  });
  const auto p = prepared(f);
  const tuner::Outcome o = tuner::run_emu(p, f.need_backend(Backend::emu).default_config(p.problem, emu_device_info()));
  ASSERT_FALSE(o.validation.ok);
  EXPECT_NE(o.validation.summary().find("(emulator):FAIL"), std::string::npos) << o.validation.summary();
  EXPECT_NE(o.validation.summary().find("planted_kernel"), std::string::npos) << o.validation.summary();
}

}  // namespace
