// gpt-oss's expert function in the mma.sync kernel's epilogue (kernels/gmm/expert_fn.cuh),
// emulated and judged against the fp64 reference: the clamped SwiGLU with a limit low enough to
// clamp often, interleaved and split w13, random O(1) biases, down's bias before the routed
// weight, split-K (the biases added once, in the finalize), padding rows left zero; every shape
// built with it (cuda_tiles_fn.cu), the emu backend's whole space, and the layer. The kernels
// and shapes that do not compute it refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gmm/detail.hpp"
#include "moe/error.hpp"
#include "support/described_devices.hpp"
#include "support/gmm_problems.hpp"
#include "support/mma_emulation.hpp"

namespace moe {
namespace {

using gmm::cuda::TileShape;
using testing::check_mma;
using testing::gmm_problem;
using testing::i32_tensor;
using testing::prep_gmm;

// The shapes built with the expert function (cuda_tiles_fn.cu), in the tile lists' order.
std::vector<TileShape> fn_shapes() {
  std::vector<TileShape> v;
  for (const auto& e : gmm::cuda::tiles())
    if (e.get_fn(false, DType::bf16)) v.push_back(e.shape);
  return v;
}

// Up with gpt-oss's function: K = hidden = 160 (a multiple of 32, not of 64: a partial slice),
// I = 48 (partial N tiles), align 8 (padding rows), limit 1.5 (sums past both clamps).
Params oai_up(const std::string& layout, std::int64_t block, bool bias, const std::string& dt = "bf16") {
  Params p = gmm_problem(19, 6, 2, 0, 160, 48, 8, "up", dt);
  p.set("activation", std::string("swiglu_oai")).set("alpha", 1.702).set("limit", 1.5);
  p.set("w13_layout", layout).set("w13_block", block).set("bias13", std::int64_t{bias});
  return p;
}
// Down: K = I = 96, N = hidden = 160 (a partial N tile for every block_n).
Params oai_down(bool bias, bool routed, const std::string& dt = "bf16") {
  Params p = gmm_problem(19, 6, 2, 0, 160, 96, 8, "down", dt);
  p.set("bias2", std::int64_t{bias}).set("routed_weight", std::int64_t{routed});
  return p;
}

TEST(GmmExpertFnEmulation, EveryShapeComputesGptOssUpAndDown) {
  std::string fails;
  int runs = 0;
  for (const char* dt : {"bf16", "f16"}) {
    const auto split = prep_gmm(oai_up("split", 1, true, dt), {}, 41);
    const auto inter = prep_gmm(oai_up("interleaved", 1, true, dt), {}, 42);
    const auto down = prep_gmm(oai_down(true, true, dt), {}, 43);
    for (const TileShape& k : fn_shapes()) {
      for (const auto* p : {&split, &inter, &down}) {
        fails += check_mma(*p, k, 1, 1 << 20);
        ++runs;
      }
    }
  }
  EXPECT_TRUE(fails.empty()) << fails;
  EXPECT_EQ(runs, 2 * 4 * 3);  // bf16 and f16, one shape per block_m
}

TEST(GmmExpertFnEmulation, InterleavedBlocksSiluAndDownWithoutTheRoutedWeight) {
  // A block of 8 rows (the mask maps c to c + (c & ~7)), no bias (padding rows zero by
  // arithmetic), plain silu on interleaved rows; down's bias alone.
  Params silu8 = oai_up("interleaved", 8, false);
  silu8.set("activation", std::string("silu"));
  const auto a = prep_gmm(silu8, {}, 44);
  const auto b = prep_gmm(oai_up("interleaved", 16, true), {}, 45);
  const auto c = prep_gmm(oai_down(true, false), {}, 46);
  std::string fails;
  for (const TileShape& k : fn_shapes())
    for (const auto* p : {&a, &b, &c}) fails += check_mma(*p, k, 1, 3);
  EXPECT_TRUE(fails.empty()) << fails;
}

TEST(GmmExpertFnEmulation, SplitKAddsTheBiasesOnceAfterThePartials) {
  // Splits 2 and 3 over K = 160 (up) and 96 (down) slices, on decode and taller tiles, with one
  // CTA and a few walking every tile: the finalize finds each row's expert for its bias.
  const auto up = prep_gmm(oai_up("interleaved", 1, true), {}, 47);
  const auto up_split = prep_gmm(oai_up("split", 1, true), {}, 48);
  const auto down = prep_gmm(oai_down(true, true), {}, 49);
  std::string fails;
  for (const TileShape& k : fn_shapes())
    for (int split : {2, 3}) {
      for (const auto* p : {&up, &up_split}) fails += check_mma(*p, k, split, split == 2 ? 1 : 1 << 20);
      if ((96 + k.bk - 1) / k.bk >= split) fails += check_mma(down, k, split, 3);
    }
  EXPECT_TRUE(fails.empty()) << fails;
}

TEST(GmmExpertFnEmulation, ZeroRowsInsideASegmentAndEmptyExpertsStayZeroWithBiases) {
  // Offsets by hand: empty experts first, between and last; an all-zero row (-0.0 in one
  // element) in the middle of a segment is padding too, as the reference says.
  for (const bool is_down : {false, true}) {
    TensorMap given;
    given["offsets"] = i32_tensor({0, 0, 9, 9, 30, 30});
    const Params pr = is_down ? oai_down(true, true) : oai_up("interleaved", 1, true);
    Params shaped = pr;
    shaped.set("experts", std::int64_t{5}).set("tokens", std::int64_t{15});
    auto p = prep_gmm(shaped, given, 50);
    TensorMap in = p.inputs;
    Tensor& act = in.at(is_down ? "h" : "x_sorted");
    const std::int64_t K = act.shape()[1];
    for (std::int64_t k = 0; k < K; ++k) act.set(13 * K + k, 0.0);
    act.data<std::uint16_t>()[13 * K + 5] = 0x8000;  // -0.0
    in.erase("row_weight");  // made again: zero on the new padding row
    const auto q = prep_gmm(shaped, in, 50);
    std::string fails;
    for (const TileShape& k : fn_shapes())
      for (int split : {1, 2}) fails += check_mma(q, k, split, 2);
    EXPECT_TRUE(fails.empty()) << fails;
  }
}

TEST(GmmExpertFnEmulation, EveryConfigOfTheEmuSpaceValidates) {
  // What `moebench sweep gmm --backend emu --full` runs for a gpt-oss-like stage: the mma configs only
  // (the wgmma and cuBLAS paths compute silu*up alone and are left out), each through the harness.
  const BackendImpl& emu = gmm_family().need_backend(Backend::emu);
  const auto up = prep_gmm(oai_up("interleaved", 1, true), {}, 51);
  const auto down = prep_gmm(oai_down(true, true), {}, 52);
  for (const auto* p : {&up, &down}) {
    const auto space = emu.space(p->problem, emu_device_info(), true);
    EXPECT_GE(space.size(), 8u);  // the expert-function shapes, split-K among them
    for (const Params& c : space) {
      EXPECT_EQ(c.s("kernel"), "mma") << c.str();
      const tuner::Outcome o = tuner::run_emu(*p, c);
      EXPECT_TRUE(o.validation.ok) << p->problem.str() << " " << c.str() << ": " << o.validation.summary();
    }
  }
}

TEST(GmmExpertFnEmulation, KernelsWithoutItRefuseSayingWhy) {
  const DeviceInfo h100 = testing::described_h100();
  const BackendImpl& cuda = gmm_family().need_backend(Backend::cuda);
  const Params up = complete(gmm_family().problem_params, oai_up("interleaved", 1, true), "gmm");
  const Params wg = complete(cuda.config_params, Params{{"kernel", std::string("wgmma")}}, "config");
  const std::string why = cuda.invalid_reason(up, wg, h100);
  EXPECT_NE(why.find("kernel=wgmma computes silu(gate)*up"), std::string::npos) << why;
  EXPECT_NE(why.find("activation=swiglu_oai"), std::string::npos) << why;
  EXPECT_NE(why.find("kernel=mma"), std::string::npos) << why;
  const Params cb = complete(cuda.config_params, Params{{"kernel", std::string("cublas")}}, "config");
  EXPECT_NE(cuda.invalid_reason(up, cb, h100).find("kernel=cublas computes silu(gate)*up"), std::string::npos);
  // The mma kernel's row map is a mask: a block that is not a power of two is refused.
  const Params odd = complete(gmm_family().problem_params, oai_up("interleaved", 3, true), "gmm");
  const std::string odd_why = cuda.invalid_reason(odd, cuda.default_config(odd, h100), h100);
  EXPECT_NE(odd_why.find("w13_block=3"), std::string::npos) << odd_why;
  EXPECT_NE(odd_why.find("power of two"), std::string::npos) << odd_why;
  EXPECT_TRUE(cuda.space(odd, h100, true).empty());
  // A shape built without it is invalid, naming the shapes that have it.
  Params plain_only = cuda.default_config(up, h100);
  plain_only.set("block_m", std::int64_t{16}).set("block_n", std::int64_t{128}).set("stages", std::int64_t{3});
  const std::string shape_why = cuda.invalid_reason(up, plain_only, h100);
  EXPECT_NE(shape_why.find("no bf16 kernel computing activation=swiglu_oai"), std::string::npos) << shape_why;
  EXPECT_NE(shape_why.find("built: 16x64x64"), std::string::npos) << shape_why;
  // The emu backend says the same when asked to run one.
  const auto p = prep_gmm(oai_up("interleaved", 1, true), {}, 53);
  EXPECT_THROW(tuner::run_emu(p, complete(cuda.config_params, Params{{"kernel", std::string("wgmma")}}, "config")),
               Error);
}

TEST(GmmExpertFnEmulation, GptOssLayerOnTheEmulatedKernelsValidates) {
  // gpt-oss-20b's layer, small: softmax over 8 experts renormalized, top-4, hidden 96 (a
  // multiple of 32, not of 128), the clamped SwiGLU at a low limit, interleaved w13, both biases.
  const FamilyDesc& L = family("moe-layer");
  const BackendImpl& emu = L.need_backend(Backend::emu);
  Params pr{{"tokens", std::int64_t{6}},    {"experts", std::int64_t{8}},  {"topk", std::int64_t{4}},
            {"hidden", std::int64_t{96}},   {"intermediate", std::int64_t{64}}, {"renormalize", std::int64_t{1}},
            {"activation", std::string("swiglu_oai")}, {"alpha", 1.702}, {"limit", 2.0},
            {"w13_layout", std::string("interleaved")}, {"w13_block", std::int64_t{1}},
            {"bias13", std::int64_t{1}},  {"bias2", std::int64_t{1}}};
  InputOptions opt;
  opt.seed = 54;
  const auto p = tuner::prepare(L, pr, opt);
  const Params cfg = tuner::complete_config(L, Backend::emu, p.problem, {}, emu_device_info());
  EXPECT_EQ(emu.invalid_reason(p.problem, cfg, emu_device_info()), "");
  const tuner::Outcome o = tuner::run_emu(p, cfg);
  EXPECT_TRUE(o.validation.ok) << o.validation.summary();
  // Judged against the same layer without bias2 it fails: the bias is in the result.
  Params plain = p.problem;
  plain.set("bias2", std::int64_t{0});
  TensorMap in = p.inputs;
  in.erase("bias2");
  const auto q = tuner::prepare(L, plain, opt, in);
  EXPECT_FALSE(L.validate(q.problem, q.inputs, o.outputs, q.reference).ok);
}

}  // namespace
}  // namespace moe
