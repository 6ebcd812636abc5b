// The cuda backend's kernel source, run on the cpu: kernels/gmm/cuda_kernel.cuh compiled
// against an emulation of its few device primitives (cuda_primitives.cuh) on the simt
// emulator (simt_emulator.hpp: a CTA's threads as fibers in a random order). Warp-collective
// instructions (ldmatrix, mma.sync, shfl) exchange through per-warp buffers with the PTX
// fragment layouts; cp.async poisons its
// destination when issued and copies only when wait_group retires its group, so a pipeline
// that reads a stage too early, or overwrites one still in use, computes garbage here too.
// This checks the kernels' indexing, tile map, pipeline and epilogues where no GPU is at hand;
// tests/gpu/gmm_gpu_test.cpp checks the real thing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>

#include "gmm/family.hpp"
#include "gmm/spec.hpp"
#include "moe/dtype.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "support/gmm_problems.hpp"
#include "emu/simt_emulator.hpp"
#include "tuner/measure/harness.hpp"

// ---- cp.async on the simt emulator: per thread, copies issued and groups committed

namespace emu {

struct Copy {
  unsigned char* dst;
  const unsigned char* src;
  bool valid;
};

struct CpAsync {
  std::vector<Copy> open;               // issued, not yet committed
  std::deque<std::vector<Copy>> groups;  // committed, not yet retired
};

// By thread of the running block; each thread clears its own when its body starts.
CpAsync& cp_state() {
  static std::vector<CpAsync> v(simt::kMaxThreads);
  return v[static_cast<std::size_t>(simt::thread())];
}

}  // namespace emu

// ---- the primitives, as the kernel header expects them

#define GMM_EMULATED_PRIMITIVES 1
#define GMM_KERNEL_NAMESPACE emulated
#define GMM_DEVICE inline
#define GMM_KERNEL(threads) void

#include "gmm/cuda_configs.hpp"

namespace moe::gmm::emulated {

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int thread_x() { return simt::thread(); }
inline long long block_x() { return simt::block(); }
inline long long grid_x() { return simt::grid(); }
inline void sync_threads() { simt::sync_threads(); }
template <class T>
T ldg(const T* p) {
  return *p;
}
inline unsigned char* dynamic_smem() { return simt::dynamic_smem(); }

inline std::uint32_t smem_u32(const void* p) {
  const auto off = static_cast<const unsigned char*>(p) - dynamic_smem();
  if (off < 0 || static_cast<std::size_t>(off) >= simt::dynamic_smem_size()) simt::fault("shared address outside the block's shared memory");
  return static_cast<std::uint32_t>(off);
}

inline int lane() { return simt::lane(); }
inline int warp() { return simt::warp(); }

inline int shfl_up(int v, int d) {
  auto& x = simt::exchange();
  x[lane()][0] = static_cast<std::uint32_t>(v);
  simt::sync_warp();
  const int r = lane() >= d ? static_cast<int>(static_cast<std::uint32_t>(x[lane() - d][0])) : v;
  simt::sync_warp();
  return r;
}

inline void cp_async16(std::uint32_t dst, const void* src, bool valid) {
  if (dst % 16 != 0 || dst + 16 > simt::dynamic_smem_size()) simt::fault("cp.async to a misaligned or out-of-range shared address");
  if (valid && reinterpret_cast<std::uintptr_t>(src) % 16 != 0) simt::fault("cp.async from a misaligned global address");
  unsigned char* d = dynamic_smem() + dst;
  std::memset(d, 0xFF, 16);  // not there yet: NaN until the group retires
  emu::cp_state().open.push_back({d, static_cast<const unsigned char*>(src), valid});
}
inline void cp_async_commit() {
  auto& l = emu::cp_state();
  l.groups.push_back(std::move(l.open));
  l.open.clear();
}
template <int N>
void cp_async_wait() {
  auto& l = emu::cp_state();
  while (l.groups.size() > static_cast<std::size_t>(N)) {
    for (auto& c : l.groups.front()) {
      if (c.valid) std::memcpy(c.dst, c.src, 16);
      else std::memset(c.dst, 0, 16);
    }
    l.groups.pop_front();
  }
}

inline void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  if (addr % 16 != 0 || addr + 16 > simt::dynamic_smem_size()) simt::fault("ldmatrix row address misaligned or out of range");
  auto& x = simt::exchange();
  x[lane()][0] = addr;
  simt::sync_warp();
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t row = x[8 * i + lane() / 4][0];
    std::memcpy(&r[i], dynamic_smem() + row + (lane() % 4) * 4, 4);
  }
  simt::sync_warp();
}

template <bool BF16>
float half_of(std::uint32_t reg, int h) {
  const auto bits = static_cast<std::uint16_t>(reg >> (16 * h));
  return BF16 ? moe::bf16_to_float(bits) : moe::f16_to_float(bits);
}

// PTX m16n8k16 (.row.col, 16-bit inputs): with g = lane/4, t = lane%4,
// a0:(g, 2t..2t+1) a1:(g+8, 2t..) a2:(g, 2t+8..) a3:(g+8, 2t+8..); b0:(k=2t.., n=g) b1:(k=2t+8.., n=g);
// d0,d1:(g, 2t..2t+1) d2,d3:(g+8, 2t..2t+1).
template <bool BF16>
void mma16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  auto& x = simt::exchange();
  for (int i = 0; i < 4; ++i) x[lane()][i] = a[i];
  x[lane()][4] = b0;
  x[lane()][5] = b1;
  simt::sync_warp();
  auto A = [&](int row, int k) { return half_of<BF16>(x[(row % 8) * 4 + (k % 8) / 2][row / 8 + 2 * (k / 8)], k % 2); };
  auto B = [&](int k, int n) { return half_of<BF16>(x[n * 4 + (k % 8) / 2][4 + k / 8], k % 2); };
  const int gi = lane() / 4, t = lane() % 4;
  float out[4];
  for (int q = 0; q < 4; ++q) {
    const int row = gi + (q / 2) * 8, col = 2 * t + q % 2;
    float s = d[q];
    for (int k = 0; k < 16; ++k) s += A(row, k) * B(k, col);
    out[q] = s;
  }
  simt::sync_warp();
  for (int q = 0; q < 4; ++q) d[q] = out[q];
}

template <bool BF16>
std::uint32_t pack2(float lo, float hi) {
  const std::uint32_t l = BF16 ? moe::float_to_bf16(lo) : moe::float_to_f16(lo);
  const std::uint32_t h = BF16 ? moe::float_to_bf16(hi) : moe::float_to_f16(hi);
  return l | (h << 16);
}

inline float exp_fast(float x) { return std::exp(x); }
inline void store_f32x2(float* p, float a, float b) {
  if (reinterpret_cast<std::uintptr_t>(p) % 8) simt::fault("misaligned float2 store");
  p[0] = a;
  p[1] = b;
}
inline void load_f32x2(const float* p, float& a, float& b) {
  if (reinterpret_cast<std::uintptr_t>(p) % 8) simt::fault("misaligned float2 load");
  a = p[0];
  b = p[1];
}
inline void store_u32(std::uint16_t* p, std::uint32_t v) {
  if (reinterpret_cast<std::uintptr_t>(p) % 4) simt::fault("misaligned 32-bit store");
  std::memcpy(p, &v, 4);
}

}  // namespace moe::gmm::emulated

#include "gmm/cuda_kernel.cuh"

// ---- launching emulated kernels the way cuda_launch.cuh launches the real ones

namespace moe {
namespace {

using gmm::cuda::KernelArgs;
using testing::gmm_problem;
using gmm::cuda::TileShape;

struct Emulated {
  TileShape shape;
  using Fn = void (*)(KernelArgs);  // kernels take their arguments by value
  Fn up_bf16, down_bf16, up_f16, down_f16;
};

template <int BM, int BN, int BK, int WM, int WN, int ST>
Emulated emulated() {
  return {TileShape{BM, BN, BK, WM, WN, ST}, &gmm::emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, true>,
          &gmm::emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, true>,
          &gmm::emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, true, false>,
          &gmm::emulated::gmm_mma_kernel<BM, BN, BK, WM, WN, ST, false, false>};
}

// The shapes cuda_tiles_*.cu instantiate (EveryBuiltShapeIsEmulated keeps the lists equal).
const std::vector<Emulated>& shapes() {
  static const std::vector<Emulated> v = {
      emulated<16, 64, 64, 1, 4, 4>(),   emulated<16, 128, 64, 1, 4, 4>(),  emulated<16, 128, 64, 1, 4, 3>(),
      emulated<16, 64, 32, 1, 4, 4>(),   emulated<32, 64, 64, 1, 4, 4>(),   emulated<32, 128, 64, 1, 4, 4>(),
      emulated<32, 128, 64, 2, 2, 3>(),  emulated<64, 64, 64, 2, 2, 4>(),   emulated<64, 128, 64, 2, 2, 3>(),
      emulated<64, 128, 32, 2, 2, 4>(),  emulated<64, 128, 64, 2, 4, 3>(),  emulated<128, 64, 64, 2, 2, 4>(),
      emulated<128, 128, 32, 2, 2, 4>(), emulated<128, 128, 64, 2, 2, 3>(), emulated<128, 128, 64, 2, 4, 3>(),
      emulated<128, 128, 32, 2, 4, 4>(), emulated<128, 256, 32, 2, 4, 3>(),
  };
  return v;
}

// Runs `grid` CTAs one after another (each CTA's threads concurrently, as fibers).
std::string run_grid(int threads, std::size_t smem, long long grid, std::uint32_t seed,
                     const std::function<void()>& body) {
  try {
    simt::launch(grid, threads, smem, [&] {
      emu::cp_state() = {};
      body();
    }, seed);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// The host half of gmm::cuda::run, on host tensors: tile counts, the grid bound, split-K finalize.
std::string run_emulated(const tuner::Prepared& p, const Emulated& k, int split, long long max_ctas, int group_m,
                         TensorMap& out) {
  const GmmSpec s = GmmSpec::parse(p.problem);
  out = allocate(p.output_specs);
  for (auto& [n, t] : out) poison_host(t.ref());
  const Tensor& act = p.inputs.at(s.act_name());
  KernelArgs a;
  a.act = act.data<std::uint16_t>();
  a.weight = p.inputs.at(s.weight_name()).data<std::uint16_t>();
  a.offsets = p.inputs.at("offsets").data<std::int32_t>();
  a.row_weight = s.routed_weight ? p.inputs.at("row_weight").data<float>() : nullptr;
  a.out = out.at(s.out_name()).data<std::uint16_t>();
  a.rows = static_cast<int>(act.shape()[0]);
  a.k_dim = static_cast<int>(s.k_dim());
  a.n_out = static_cast<int>(s.n_out());
  a.n_w = static_cast<int>(s.n_w());
  a.experts = static_cast<int>(s.e_local());
  a.split = split;
  a.group_m = group_m;
  const int per = s.down ? k.shape.bn : k.shape.bn / 2;
  a.n_tiles = static_cast<int>((s.n_out() + per - 1) / per);
  std::vector<float> partial(static_cast<std::size_t>(split) * a.rows * a.n_w, std::nanf(""));
  if (split > 1) a.partial = partial.data();
  if (a.rows == 0) return {};
  auto fn = s.dtype == DType::bf16 ? (s.down ? k.down_bf16 : k.up_bf16) : (s.down ? k.down_f16 : k.up_f16);
  const long long bound = (static_cast<long long>(a.rows + k.shape.bm - 1) / k.shape.bm + a.experts) * a.n_tiles * split;
  const long long grid = std::min(bound, max_ctas);
  std::string err = run_grid(k.shape.threads(), gmm::cuda::smem_bytes(k.shape, a.experts), grid, 7, [&] { fn(a); });
  if (!err.empty() || split == 1) return err;
  auto fin = s.down ? (s.dtype == DType::bf16 ? &gmm::emulated::gmm_finalize_kernel<false, true>
                                              : &gmm::emulated::gmm_finalize_kernel<false, false>)
                    : (s.dtype == DType::bf16 ? &gmm::emulated::gmm_finalize_kernel<true, true>
                                              : &gmm::emulated::gmm_finalize_kernel<true, false>);
  return run_grid(256, 0, 3, 11, [&] { fin(a); });
}

Tensor i32_tensor(std::vector<std::int32_t> v) {
  Tensor t(DType::i32, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.data<std::int32_t>()[i] = v[i];
  return t;
}

tuner::Prepared prep(const Params& pr, TensorMap given = {}, std::uint64_t seed = 1) {
  InputOptions o;
  o.seed = seed;
  return tuner::prepare(gmm_family(), pr, o, std::move(given));
}

// Empty string when the emulated kernel's output passes the family's validation.
std::string check(const tuner::Prepared& p, const Emulated& k, int split, long long max_ctas, int group_m = 1) {
  TensorMap out;
  const std::string what = p.problem.str() + " tile " + std::to_string(k.shape.bm) + "x" + std::to_string(k.shape.bn) +
                           "x" + std::to_string(k.shape.bk) + " warps " + std::to_string(k.shape.warps_m) + "x" +
                           std::to_string(k.shape.warps_n) + " stages " + std::to_string(k.shape.stages) +
                           " split " + std::to_string(split) + " group_m " + std::to_string(group_m) +
                           " ctas<=" + std::to_string(max_ctas) + ": ";
  const std::string err = run_emulated(p, k, split, max_ctas, group_m, out);
  if (!err.empty()) return what + err + "\n";
  const Validation v = gmm_family().validate(p.problem, p.inputs, out, p.reference);
  return v.ok ? std::string() : what + v.summary() + "\n";
}

TEST(GmmEmulation, EveryBuiltShapeIsEmulated) {
  const auto& built = gmm::cuda::tiles();
  ASSERT_EQ(built.size(), shapes().size());
  for (std::size_t i = 0; i < built.size(); ++i) EXPECT_TRUE(built[i].shape == shapes()[i].shape) << i;
}

TEST(GmmEmulation, EveryShapeBothStagesWithTails) {
  // D=72 and I=40: a partial K slice and partial N tiles; experts with 0, 1 and 36 rows.
  for (const char* stage : {"up", "down"}) {
    TensorMap given;
    given["offsets"] = i32_tensor({0, 0, 1, 1, 37});
    Params pr = gmm_problem(19, 4, 2, 0, 72, 40, 1, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, given);
    std::string fails;
    for (auto& k : shapes()) fails += check(p, k, 1, 1 << 20);
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, SplitKAndPersistentCtas) {
  // K = 160: three BK=64 slices (the last partial), five BK=32 ones; splits that divide them
  // unevenly, and grids of 1 and 3 CTAs walking every tile.
  for (const char* stage : {"up", "down"}) {
    Params pr = gmm_problem(24, 6, 2, 1, 160, 160, 4, stage);
    const auto p = prep(pr, {}, 3);
    std::string fails;
    for (std::size_t i : {0u, 3u, 8u}) {
      fails += check(p, shapes()[i], 2, 1);
      fails += check(p, shapes()[i], 3, 3);
      fails += check(p, shapes()[i], 1, 2);
    }
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, LongKTripsRemainderAndTail) {
  // The k-loop proper takes STAGES whole slices per trip and runs only once a split has
  // 2*STAGES-1 of them; the slices left over go round the stage ring with the partial one.
  // up, K = 808: 12 whole BK=64 slices (25 of BK=32) and a 40-element (8-element) tail;
  // down, K = 768: no partial slice. Every shape makes at least two trips and has a remainder.
  // Split-K 2 gives each split its own trips, the tail to the last split only.
  for (const char* stage : {"up", "down"}) {
    const bool up = std::string(stage) == "up";
    Params pr = gmm_problem(5, 2, 1, 0, up ? 808 : 24, up ? 24 : 768, 1, stage);
    if (!up) pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, {}, 13);
    std::string fails;
    for (auto& k : shapes()) fails += check(p, k, 1, 1 << 20);
    for (std::size_t i : {2u, 10u, 16u}) fails += check(p, shapes()[i], 2, 3);
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, GroupedTileOrder) {
  // Experts with several 16-row M-tiles, group sizes that do and do not divide the M-tile
  // count (the last group short), with split-K, on grids of 1, 5 and all CTAs: every tile
  // exactly once.
  for (const char* stage : {"up", "down"}) {
    Params pr = gmm_problem(96, 4, 2, 0, 64, 48, 4, stage);
    if (std::string(stage) == "down") pr.set("routed_weight", std::int64_t{1});
    const auto p = prep(pr, {}, 9);
    std::string fails;
    for (int group_m : gmm::cuda::kGroupM)
      for (long long ctas : {1LL, 5LL, 1LL << 20}) {
        fails += check(p, shapes()[0], 1, ctas, group_m);
        fails += check(p, shapes()[0], 2, ctas, group_m);
      }
    fails += check(p, shapes()[7], 1, 3, 3);  // 64-row tiles: a group larger than some experts' tile count
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmEmulation, ManyExpertsTileMapAndF16) {
  // 70 local experts (the warp scan gives each lane three), most empty; f16 on the shapes built for it.
  for (const char* stage : {"up", "down"})
    for (const char* dt : {"bf16", "f16"}) {
      Params pr = gmm_problem(5, 64, 4, 6, 64, 48, 8, stage, dt);
      const auto p = prep(pr, {}, 5);
      std::string fails;
      for (std::size_t i : {0u, 5u, 13u}) fails += check(p, shapes()[i], 1, 4);
      EXPECT_TRUE(fails.empty()) << fails;
    }
}

TEST(GmmEmulation, BrokenPipelineIsCaught) {
  // The emulation must be able to fail: shared memory read before its cp.async group retired
  // holds poison, and the data lands at wait_group. (Mutating the kernel's wait_group depth,
  // barriers, ldmatrix lanes, gate/up rows or split ranges turns the tests above red.)
  alignas(16) static unsigned char src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<int> seen(32, -1), landed(32, -1);
  ASSERT_EQ(run_grid(32, 1024, 1, 1, [&] {
              using namespace gmm::emulated;
              const int t = thread_x();
              cp_async16(static_cast<std::uint32_t>(t * 16), src, true);
              cp_async_commit();
              seen[t] = dynamic_smem()[t * 16];  // too early: still in flight
              cp_async_wait<0>();
              sync_threads();
              landed[t] = dynamic_smem()[t * 16];
            }),
            "");
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(seen[t], 0xFF);
    EXPECT_EQ(landed[t], 1);
  }
}

}  // namespace
}  // namespace moe
