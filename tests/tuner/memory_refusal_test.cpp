// Problems that do not fit are refused before anything is allocated, with the numbers and
// what to do: on the host for every family (MemAvailable, cgroup and ulimit limits), and on
// the device before a point starts (one copy of the problem, plus the timer's buffers).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "support/gmm_problems.hpp"
#include "moe/error.hpp"
#include "moe/memory.hpp"
#include "tuner/measure/harness.hpp"
#include "tuner/measure/memory_check.hpp"

using namespace moe;

namespace {

struct HostLimit {
  explicit HostLimit(const char* bytes) { ::setenv("MOEBENCH_HOST_MEM_BYTES", bytes, 1); }
  ~HostLimit() { ::unsetenv("MOEBENCH_HOST_MEM_BYTES"); }
};

// Problems of a few tens of MB: harmless if the refusal were missing, refused under a 0.6 GB limit
// (0.85 x 0.6 GB less 0.5 GB of headroom: 10 MB usable).
Params mid_sized(const std::string& fam) {
  Params p{{"tokens", std::int64_t{4096}}, {"experts", std::int64_t{64}}, {"topk", std::int64_t{8}}};
  if (fam == "router") p = Params{{"tokens", std::int64_t{65536}}, {"experts", std::int64_t{256}}, {"topk", std::int64_t{8}}};
  if (fam != "router") p.set("hidden", std::int64_t{1024});
  if (fam == "gmm" || fam == "moe-layer") p.set("intermediate", std::int64_t{256});
  if (fam == "gmm") p.set("dtype", std::string("bf16"));
  return p;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(MemoryRefusal, EveryFamilyIsRefusedOnTheHostWithTheNumbers) {
  for (const FamilyDesc* f : families()) {
    const Params p = mid_sized(f->name);
    {
      HostLimit limit("0.6e9");
      const std::string m = refusal([&] { tuner::prepare(*f, p, InputOptions{}); });
      // The family's name (the layer's refusal comes from its gmm stage's weights), what it needs.
      EXPECT_EQ(m.rfind(f->name == "moe-layer" ? "gmm" : f->name, 0), 0u) << m;
      EXPECT_NE(m.find(" needs "), std::string::npos) << m;
      EXPECT_NE(m.find("of host memory"), std::string::npos) << m;
      EXPECT_NE(m.find("0.6 GB available (MOEBENCH_HOST_MEM_BYTES)"), std::string::npos) << m;
      // The headroom rule, so "needs 0.1 GB, 0.6 GB available" does not read as a bug.
      EXPECT_NE(m.find("more than the 0.0 GB it may use"), std::string::npos) << m;
      EXPECT_NE(m.find("0.6 GB is kept back for the process itself"), std::string::npos) << m;
      EXPECT_NE(m.find("--ep N"), std::string::npos) << m;
    }
    HostLimit plenty("64e9");
    EXPECT_EQ(refusal([&] { tuner::check_host_fits(*f, complete(f->problem_params, p, f->name), {}); }), "") << f->name;
  }
}

TEST(MemoryRefusal, GivenInputsDoNotCount) {
  const FamilyDesc& f = family("router");
  const Params p = complete(f.problem_params, mid_sized("router"), "router");
  const Footprint fp = f.footprint(p);
  double logits = 0;
  for (auto& [n, b] : fp.inputs)
    if (n == "logits") logits = b;
  ASSERT_GT(logits, 0);
  // A limit the generated logits would break, the given ones do not.
  const double usable_needed = logits + 2 * fp.outputs;
  HostLimit limit(std::to_string((usable_needed / 2 + 0.5e9) / 0.85).c_str());
  EXPECT_NE(refusal([&] { tuner::check_host_fits(f, p, {}); }), "");
  TensorMap given;
  given["logits"] = Tensor(DType::f32, {1});
  EXPECT_EQ(refusal([&] { tuner::check_host_fits(f, p, given); }), "");
}

TEST(MemoryRefusal, HostLimitRespectsUlimit) {
  ::unsetenv("MOEBENCH_HOST_MEM_BYTES");
  const MemoryLimit unlimited = host_memory_limit();
  ASSERT_GT(unlimited.bytes, 0) << "no limit readable on this host";
  // In a child: an address-space limit 200 MB above what the process maps now.
  EXPECT_EXIT(
      {
        rlimit r{};
        getrlimit(RLIMIT_AS, &r);
        std::ifstream in("/proc/self/status");
        double vm = 0;
        for (std::string l; std::getline(in, l);)
          if (l.rfind("VmSize:", 0) == 0) vm = std::stod(l.substr(7)) * 1024;
        r.rlim_cur = static_cast<rlim_t>(vm + 200e6);
        if (setrlimit(RLIMIT_AS, &r) != 0) std::exit(3);
        const MemoryLimit m = host_memory_limit();
        std::exit(m.source == "ulimit -v (RLIMIT_AS)" && m.bytes > 150e6 && m.bytes < 250e6 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(MemoryRefusal, DeviceRefusesWhatOneCopyCannotHold) {
  DeviceInfo h100;
  h100.backend = Backend::cuda;
  h100.name = "NVIDIA H100 80GB HBM3";
  // kimi-k2's gmm up without EP: 384 experts x 4096 x 7168 bf16 = 22.6 GB of w13.
  Params p = moe::testing::gmm_preset("kimi-k2");
  p.set("tokens", std::int64_t{4096});
  const FamilyDesc& g = family("gmm");
  p = complete(g.problem_params, p, "gmm");
  const std::string m = refusal([&] { tuner::check_device_fits(g, p, h100, 100e6, "the L2 flush buffer", 16e9); });
  EXPECT_NE(m.find("of device memory"), std::string::npos) << m;
  EXPECT_NE(m.find("22.6 GB of w13"), std::string::npos) << m;
  EXPECT_NE(m.find("16.0 GB available (free on NVIDIA H100 80GB HBM3 (cudaMemGetInfo))"), std::string::npos) << m;
  EXPECT_NE(m.find("--ep N"), std::string::npos) << m;
  EXPECT_EQ(refusal([&] { tuner::check_device_fits(g, p, h100, 100e6, "the L2 flush buffer", 79e9); }), "");
  // Sharded 8 ways it fits in 16 GB.
  p.set("expert_end", std::int64_t{48});
  EXPECT_EQ(refusal([&] { tuner::check_device_fits(g, p, h100, 100e6, "the L2 flush buffer", 16e9); }), "");
}

TEST(MemoryRefusal, KimiK2LayerAt32kTokensFitsOneCopyOnAnH100) {
  // The case: two copies failed from ~26k tokens; one copy (every stage's buffers at
  // once, a bound) fits 80 GB at 32768 tokens, and 40 GB free is refused with the numbers.
  DeviceInfo h100;
  h100.backend = Backend::cuda;
  h100.name = "NVIDIA H100 80GB HBM3";
  const FamilyDesc& l = family("moe-layer");
  Params p = moe::testing::gmm_preset("kimi-k2");
  p.set("tokens", std::int64_t{32768});
  p = complete(l.problem_params, p, "moe-layer");
  EXPECT_EQ(refusal([&] { tuner::check_device_fits(l, p, h100, 100e6, "the L2 flush buffer", 79e9); }), "");
  const std::string m = refusal([&] { tuner::check_device_fits(l, p, h100, 100e6, "the L2 flush buffer", 40e9); });
  EXPECT_NE(m.find("moe-layer at "), std::string::npos) << m;
  EXPECT_NE(m.find("22.6 GB of w13"), std::string::npos) << m;
  EXPECT_NE(m.find("GB of intermediates between its kernels"), std::string::npos) << m;
}

TEST(MemoryRefusal, LayerHostFootprintIsItsInputsAndOutputNotItsIntermediates) {
  // kimi-k2 at 131072 tokens on a host with 134 GB: 36 GB of inputs (34 GB of weights) and the
  // output twice fit; its intermediates (x_sorted, h, y_sorted: 39 GB) live where it runs.
  const FamilyDesc& l = family("moe-layer");
  Params p = moe::testing::gmm_preset("kimi-k2");
  p.set("tokens", std::int64_t{131072});
  p = complete(l.problem_params, p, "moe-layer");
  const Footprint fp = l.footprint(p);
  double inputs = 0;
  for (auto& [n, b] : fp.inputs) inputs += b;
  EXPECT_NEAR(inputs, 36.0e9, 0.5e9);
  EXPECT_NEAR(fp.outputs, 131072.0 * 7168 * 2, 1);
  EXPECT_NEAR(fp.between, 38.9e9, 0.5e9);
  {
    HostLimit limit("60e9");
    EXPECT_EQ(refusal([&] { tuner::check_host_fits(l, p, {}); }), "");
    EXPECT_EQ(refusal([&] { l.check_problem(p); }), "");
  }
  HostLimit limit("30e9");
  const std::string m = refusal([&] { tuner::check_host_fits(l, p, {}); });
  EXPECT_NE(m.find("22.6 GB of w13"), std::string::npos) << m;
  EXPECT_EQ(m.find("x_sorted"), std::string::npos) << m;
  // The cpu backend does hold them on the host: its workspace is checked before it is allocated.
  const std::string w = refusal([&] { tuner::check_host_workspace(l, p, fp.between); });
  EXPECT_NE(w.find("of the cpu backend's workspace (its intermediates)"), std::string::npos) << w;
  EXPECT_NE(w.find("--ep N"), std::string::npos) << w;
}

TEST(MemoryRefusal, DeviceCountsTheDefaultConfigsWorkspace) {
  DeviceInfo h100;
  h100.backend = Backend::cuda;
  h100.name = "NVIDIA H100 80GB HBM3";
  FamilyDesc g = family("gmm");
  Params p = moe::testing::gmm_preset("deepseek-v3");
  p.set("tokens", std::int64_t{4096});
  p.set("expert_end", std::int64_t{32});
  p = complete(g.problem_params, p, "gmm");
  const Footprint fp = g.footprint(p);
  double one_copy = fp.outputs;
  for (auto& [n, b] : fp.inputs) one_copy += b;
  const double free = one_copy + 0.5e9 + 0.05e9;  // the headroom and 50 MB to spare
  // The default (split_k=1 mma) needs no workspace: it fits.
  EXPECT_EQ(refusal([&] { tuner::check_device_fits(g, p, h100, 0, "", free); }), "");
  // A default with split-K partials (8 x rows x 2I fp32: gigabytes) does not.
  for (BackendImpl& b : g.backends)
    if (b.backend == Backend::cuda)
      b.default_config = [def = b.default_config](const Params& q, const DeviceInfo& d) {
        return Params(def(q, d)).set("split_k", std::int64_t{8});
      };
  const std::string m = refusal([&] { tuner::check_device_fits(g, p, h100, 0, "", free); });
  EXPECT_NE(m.find("the default config's workspace"), std::string::npos) << m;
}
