// The layer's decode path (path=decode): the front kernel (routing, alignment and the gather in
// one launch) run under the emulator, its intermediates against the router's and dispatch's own
// references, and the layer end to end against its fp64 reference; where it cannot run, a reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <cstring>
#include <string>
#include <vector>

#include "common/emu_backend.hpp"
#include "emu/ptx.hpp"
#include "gmm/emu.hpp"
#include "gmm/family.hpp"
#include "layer/front.hpp"
#include "layer/stages.hpp"
#include "moe/cuda_device.hpp"
#include "moe/family.hpp"
#include "support/prepared_problems.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using moe::Params;
using moe::Tensor;
using moe::TensorMap;

// softmax over 16 experts, no groups.
Params plain(std::int64_t T, const std::string& dtype) {
  return Params{{"tokens", T},          {"dtype", dtype},       {"experts", std::int64_t{16}}, {"topk", std::int64_t{4}},
                {"hidden", std::int64_t{128}}, {"intermediate", std::int64_t{128}}, {"align", std::int64_t{4}}};
}
// DeepSeek-like at small E: sigmoid + bias, 8 groups keeping 3 by their top-2 sums, a shared
// expert, renormalised and scaled.
Params deepseek_like(std::int64_t T, const std::string& dtype) {
  return Params{{"tokens", T},
                {"dtype", dtype},
                {"experts", std::int64_t{32}},
                {"topk", std::int64_t{4}},
                {"shared", std::int64_t{1}},
                {"groups", std::int64_t{8}},
                {"topk_group", std::int64_t{3}},
                {"scoring", std::string("sigmoid")},
                {"bias", std::int64_t{1}},
                {"rsf", 2.5},
                {"hidden", std::int64_t{256}},
                {"intermediate", std::int64_t{128}},
                {"align", std::int64_t{8}}};
}
// An expert-parallel rank of it: experts [5, 21), no shared one.
Params ep_slice(std::int64_t T, const std::string& dtype) {
  return deepseek_like(T, dtype).set("expert_begin", std::int64_t{5}).set("expert_end", std::int64_t{21});
}

// Ties and NaN in the logits: token 0 all equal (every pick a tie, to the lower index), token 1
// some NaN, the last token all NaN (NaN scores: experts 0..k-1 with weight 0), and repeated
// values elsewhere.
void plant_edges(Tensor& logits) {
  const std::int64_t T = logits.shape()[0], E = logits.shape()[1];
  for (std::int64_t e = 0; e < E; ++e) logits.set(e, 0.5);
  if (T > 1)
    for (std::int64_t e = 0; e < E; e += 3) logits.set(E + e, std::nan(""));
  if (T > 2)
    for (std::int64_t e = 0; e < E; ++e) logits.set((T - 1) * E + e, std::nan(""));
  for (std::int64_t t = 2; t + 1 < T; t += 2) logits.set(t * E + 7, logits.get(t * E + 3));
}

moe::tuner::Prepared prepared(const Params& L, std::uint64_t seed) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  auto p = moe::testing::prepare_seeded(f, L, {}, "uniform", seed);
  plant_edges(p.inputs.at("logits"));
  // Again from the edited logits: the reference follows them.
  return moe::testing::prepare_raw(f, p.problem, std::move(p.inputs));
}

Params decode_config(std::int64_t ctas) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  return moe::complete(f.need_backend(moe::Backend::emu).config_params,
                       Params{{"path", std::string("decode")}, {"front_ctas", ctas}}, "decode config");
}

// The front's outputs as the layer holds them (sized for the worst-case rows), poisoned.
TensorMap front_outputs(const Params& L) {
  const auto st = moe::layer_stages(L);
  const std::int64_t T = L.i("tokens"), K = L.i("topk") + L.i("shared"), D = L.i("hidden");
  const std::int64_t El = moe::layer_experts(L).count(), R = moe::layer_max_rows(L);
  const bool fp8 = L.s("dtype") == "fp8";
  const moe::DType act = L.s("dtype") == "f16" ? moe::DType::f16 : moe::DType::bf16;
  TensorMap o;
  o["weights"] = Tensor(moe::DType::f32, {T, K});
  o["ids"] = Tensor(moe::DType::i32, {T, K});
  o["offsets"] = Tensor(moe::DType::i32, {El + 1});
  o["src"] = Tensor(moe::DType::i32, {R});
  o["dst"] = Tensor(moe::DType::i32, {T * K});
  o["x_sorted"] = Tensor(fp8 ? moe::DType::e4m3 : act, {R, D});
  if (fp8) o["x_scale"] = Tensor(moe::DType::f32, {R, D / 128});
  const auto map = static_cast<std::int64_t>(moe::gmm_tile_map_bytes(R, 16, El) / 4);
  o["up_map"] = Tensor(moe::DType::i32, {map});
  o["down_map"] = Tensor(moe::DType::i32, {map});
  for (auto& [k, t] : o) moe::poison_host(t.ref());
  return o;
}

Tensor first_rows(const Tensor& t, std::int64_t n) {
  moe::Shape s = t.shape();
  const std::size_t row = t.nbytes() / static_cast<std::size_t>(s[0]);
  s[0] = n;
  Tensor r(t.dtype(), s);
  std::memcpy(r.raw(), t.raw(), row * static_cast<std::size_t>(n));
  return r;
}

// The tile map gmm's schedule kernel writes from `offsets` for block_m bm (emulated), against
// the one the front wrote for the same block_m: entry for entry, the status entry too.
void check_map(const Tensor& front_map, const Tensor& offsets, std::int64_t rows, int bm, const std::string& what) {
  moe::gmm::cuda::KernelArgs a;
  a.offsets = offsets.data<std::int32_t>();
  a.rows = static_cast<int>(rows);
  a.experts = static_cast<int>(offsets.numel() - 1);
  a.map_tiles = static_cast<int>((rows + bm - 1) / bm + a.experts);
  std::vector<std::int32_t> own(4 * static_cast<std::size_t>(a.map_tiles + 1), -77);
  a.tile_map = own.data();
  moe::gmm::emu::run_schedule(a, bm, {});
  for (std::size_t i = 0; i < own.size(); ++i)
    ASSERT_EQ(front_map.data<std::int32_t>()[i], own[i]) << what << " block_m=" << bm << " map int " << i;
}

// The router stage's reference outputs (weights, ids) on the layer's logits and bias; `rin` gets
// the inputs it read.
TensorMap router_reference(const Params& L, const TensorMap& in, TensorMap* rin_out = nullptr) {
  const moe::Params problem = moe::layer_stages(L)[0].problem;
  const moe::FamilyDesc& router = moe::family("router");
  TensorMap rin;
  rin["logits"] = Tensor::borrow(in.at("logits"));
  if (in.count("bias")) rin["bias"] = Tensor::borrow(in.at("bias"));
  TensorMap ro = moe::allocate(router.output_specs(problem, rin));
  router.reference(problem, rin, ro);
  if (rin_out) *rin_out = std::move(rin);
  return ro;
}

// Runs the front under the emulator and checks it against the router's and dispatch's
// references: the router's on the logits, dispatch's on the ids the front chose; and the tile
// maps it writes for the gmm stages (block_m map_bm) against the schedule kernel's.
void check_front(const Params& given, std::int64_t ctas, std::uint64_t seed, std::array<int, 2> map_bm = {16, 16}) {
  const auto p = prepared(given, seed);
  const Params& L = p.problem;
  const std::string what = L.str() + " ctas=" + std::to_string(ctas);
  TensorMap in;
  for (const char* k : {"logits", "x", "bias"})
    if (p.inputs.count(k)) in[k] = Tensor::borrow(p.inputs.at(k));
  TensorMap out = front_outputs(L);
  moe::run_front(moe::Backend::emu, L, decode_config(ctas), moe::refs(in), moe::refs(out), moe::LaunchContext{}, map_bm);
  check_map(out.at("up_map"), out.at("offsets"), out.at("src").numel(), map_bm[0], what + " up");
  check_map(out.at("down_map"), out.at("offsets"), out.at("src").numel(), map_bm[1], what + " down");

  const auto st = moe::layer_stages(L);
  const moe::FamilyDesc& router = moe::family("router");
  TensorMap rin;
  TensorMap rref = router_reference(L, in, &rin);
  TensorMap rgot;
  for (const char* k : {"weights", "ids"}) rgot[k] = Tensor::borrow(out.at(k));
  const moe::Validation rv = router.validate(st[0].problem, rin, rgot, rref);
  EXPECT_TRUE(rv.ok) << what << " router: " << rv.summary();
  // The validator forgives swaps of near-equal scores; token 0's exact ties must go to the lower index.
  for (std::int64_t j = 0; j < rref.at("ids").shape()[1]; ++j)
    EXPECT_EQ(out.at("ids").data<std::int32_t>()[j], rref.at("ids").data<std::int32_t>()[j]) << what << " tied slot " << j;

  const moe::FamilyDesc& dispatch = moe::family("dispatch");
  TensorMap din;
  din["x"] = Tensor::borrow(in.at("x"));
  din["ids"] = Tensor::borrow(out.at("ids"));
  TensorMap dref = moe::allocate(dispatch.output_specs(st[1].problem, din));
  dispatch.reference(st[1].problem, din, dref);
  const std::int64_t R = dref.at("src").numel();
  TensorMap dgot;
  for (const char* k : {"offsets", "dst"}) dgot[k] = Tensor::borrow(out.at(k));
  for (const char* k : {"src", "x_sorted", "x_scale"})
    if (out.count(k)) dgot[k] = first_rows(out.at(k), R);
  const moe::Validation dv = dispatch.validate(st[1].problem, din, dgot, dref);
  EXPECT_TRUE(dv.ok) << what << " dispatch: " << dv.summary();
  // Rows past the routing's R are the worst case's room: left alone, as dispatch leaves them.
  const Tensor& src = out.at("src");
  for (std::int64_t r = R; r < src.numel(); ++r)
    ASSERT_TRUE(moe::is_poison(moe::DType::i32, src.data<std::int32_t>() + r)) << what << " src row " << r;
}

TEST(LayerDecode, FrontMatchesTheRouterAndDispatchReferences) {
  std::uint64_t seed = 3;
  for (std::int64_t T : {1, 5, 16, 64})
    for (const char* dtype : {"bf16", "fp8"}) {
      check_front(plain(T, dtype), 1, ++seed, {16, 32});
      check_front(deepseek_like(T, dtype), T == 16 ? 3 : 1, ++seed, {64, 16});
      check_front(ep_slice(T, dtype), 2, ++seed, {128, 32});
    }
}

TEST(LayerDecode, FrontServesHalfAnd4BitLayers) {
  check_front(plain(5, "f16"), 2, 101);
  // 4-bit layers gather bf16 activations.
  check_front(deepseek_like(16, "mxfp4").set("intermediate", std::int64_t{64}), 2, 102);
}

// The layer end to end through the front, the gmm stages and combine, against its fp64 reference.
TEST(LayerDecode, LayerMatchesItsReference) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  std::uint64_t seed = 50;
  for (std::int64_t T : {1, 5, 16, 64})
    for (const char* dtype : {"bf16", "fp8"}) {
      const auto p = prepared(T == 64 ? plain(T, dtype) : deepseek_like(T, dtype), ++seed);
      const Params cfg = moe::tuner::complete_config(f, moe::Backend::emu, p.problem, decode_config(0),
                                                     moe::emu_device_info());
      const auto o = moe::tuner::run_emu(p, cfg);
      EXPECT_TRUE(o.validation.ok) << T << " " << dtype << ": " << o.validation.summary();
    }
}

// What one call launches, as the emulated run logs it (the cuda plan launches the same): the
// decode path replaces router and dispatch's kernels with the front, and a biased 4-bit stage
// adds its pad-row pass. These are the counts the decode layer's fusion work starts from.
TEST(LayerDecode, KernelsPerCallByPath) {
  using V = std::vector<std::string>;
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const auto kernels = [&](const Params& L, const std::string& path) {
    const auto p = prepared(L, 77);
    Params c = decode_config(0);
    c.set("path", path);
    const auto o = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem, c, moe::emu_device_info()));
    EXPECT_TRUE(o.validation.ok) << o.validation.summary();
    return o.kernels;
  };
  // The front writes both gmm stages' tile maps: no schedule kernel on the decode path.
  const V gmm = {"gmm_schedule_kernel", "gmm_mma_kernel"};
  for (std::int64_t T : {1, 16}) {
    const V decode = {"decode front kernel", "gmm_mma_kernel", "gmm_mma_kernel", "combine_kernel"};
    EXPECT_EQ(kernels(plain(T, "bf16"), "decode"), decode) << T;
    V stages = {"router kernel", "align_single_kernel", "gather (row order)"};
    stages.insert(stages.end(), gmm.begin(), gmm.end());
    stages.insert(stages.end(), gmm.begin(), gmm.end());
    stages.push_back("combine_kernel");
    EXPECT_EQ(kernels(plain(T, "bf16"), "stages"), stages) << T;
  }
  Params oss = plain(2, "mxfp4");
  oss.set("intermediate", std::int64_t{64}).set("activation", std::string("swiglu_oai"));
  oss.set("w13_layout", std::string("interleaved")).set("bias13", std::int64_t{1}).set("bias2", std::int64_t{1});
  const V oss_decode = {"decode front kernel", "gmm_pad_rows_kernel", "gmm_w4_mma_kernel",
                        "gmm_pad_rows_kernel", "gmm_w4_mma_kernel",   "combine_kernel"};
  EXPECT_EQ(kernels(oss, "decode"), oss_decode);
}

// Combine folded into down (fold_combine=1): the layer's output bit for bit what the decode path
// with combine as its own kernel gives, on the same inputs, for every kind of down kernel: bf16
// and f16 mma, fp8 (both scale formats), a biased down (the expert-function kernel); split-K
// (whose finalize the fold replaces), an EP slice, a shared expert. And one kernel fewer.
TEST(LayerDecode, FoldedCombineGivesCombinesBits) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  // A biased down (bf16: the mma kernel with the expert function).
  Params biased = plain(3, "bf16");
  biased.set("bias2", std::int64_t{1});
  struct Case {
    Params L;
    std::string down;  // the gmm_down stage's config ("auto": the default)
  };
  const std::vector<Case> cases = {
      {plain(1, "bf16"), "auto"},
      {plain(16, "bf16"), "split_k=2"},
      {plain(5, "f16").set("intermediate", std::int64_t{192}), "split_k=3"},
      {deepseek_like(16, "bf16"), "auto"},
      {ep_slice(5, "bf16"), "split_k=2"},
      {deepseek_like(5, "fp8"), "auto"},
      {deepseek_like(1, "fp8").set("scale_fmt", std::string("ue8m0")).set("intermediate", std::int64_t{256}), "split_k=2"},
      {ep_slice(16, "fp8").set("intermediate", std::int64_t{512}), "split_k=4"},
      {biased, "auto"},
  };
  std::uint64_t seed = 300;
  for (const Case& c : cases) {
    const auto p = prepared(c.L, ++seed);
    const std::string what = p.problem.str() + " gmm_down=" + c.down;
    std::vector<std::string> kernels[2];
    moe::tuner::Outcome run[2];
    Tensor* out[2];
    for (int fold : {0, 1}) {
      Params cfg = decode_config(0);
      cfg.set("fold_combine", std::int64_t{fold}).set("gmm_down", c.down);
      run[fold] = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem, cfg,
                                                                     moe::emu_device_info()));
      ASSERT_TRUE(run[fold].validation.ok) << what << " fold " << fold << ": " << run[fold].validation.summary();
      kernels[fold] = run[fold].kernels;
      out[fold] = &run[fold].outputs.at("out");
    }
    ASSERT_EQ(out[0]->nbytes(), out[1]->nbytes()) << what;
    for (std::size_t i = 0; i < out[0]->nbytes() / 2; ++i)
      ASSERT_EQ(static_cast<const std::uint16_t*>(out[0]->raw())[i], static_cast<const std::uint16_t*>(out[1]->raw())[i])
          << what << " out element " << i;
    // Folded: no combine, and no split-K finalize (the fold sums the splits).
    std::vector<std::string> want;
    for (std::size_t i = 0; i < kernels[0].size(); ++i) {
      const bool down_finalize = kernels[0][i] == "gmm_finalize_kernel" && i + 1 == kernels[0].size() - 1;
      if (kernels[0][i] != "combine_kernel" && !down_finalize) want.push_back(kernels[0][i]);
    }
    EXPECT_EQ(kernels[1], want) << what;
    EXPECT_EQ(kernels[0].back(), "combine_kernel") << what;
  }
}

// On the decode path the front writes down's tile map before up runs, and the layer hands it to
// down as early_tile_map: down's 16-row tiles read it before their wait and send their first
// tile's weights to L2 there. Every prefetch lands inside w2 (none in w13: up's map is its
// predecessor's output), ahead of the wait; through the stages no map is early and none is sent.
TEST(LayerDecode, DownSendsItsWeightsToL2BeforeItsWaitOnTheDecodePathOnly) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dtype : {"bf16", "fp8"})
    for (const char* path : {"decode", "stages"}) {
      const auto p = prepared(plain(std::string(dtype) == "fp8" ? 16 : 1, dtype), 70);
      Params cfg = decode_config(0);
      cfg.set("path", std::string(path));
      std::vector<simt::ptx::L2Prefetch> log;
      simt::ptx::l2_prefetch_log() = &log;
      const auto o = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem, cfg,
                                                                        moe::emu_device_info()));
      simt::ptx::l2_prefetch_log() = nullptr;
      const std::string what = std::string(dtype) + " path=" + path;
      ASSERT_TRUE(o.validation.ok) << what << ": " << o.validation.summary();
      const Tensor& w2 = p.inputs.at("w2");
      const auto* lo = static_cast<const unsigned char*>(w2.raw());
      std::size_t in_w2 = 0;
      for (const auto& x : log) {
        EXPECT_FALSE(x.after_wait) << what;
        in_w2 += x.p >= lo && x.p + x.bytes <= lo + w2.nbytes();
      }
      EXPECT_EQ(in_w2, log.size()) << what << ": prefetches outside w2";
      if (std::string(path) == "decode") EXPECT_GT(log.size(), 0u) << what;
      else EXPECT_EQ(log.size(), 0u) << what;
    }
}

// Byte ranges [begin, end) the prefetches of `log` cover, merged; `overlap` gets the bytes sent
// more than once.
std::vector<std::pair<const unsigned char*, const unsigned char*>> covered(const std::vector<simt::ptx::L2Prefetch>& log,
                                                                       std::size_t* overlap) {
  std::vector<std::pair<const unsigned char*, const unsigned char*>> r;
  for (const auto& x : log) r.emplace_back(x.p, x.p + x.bytes);
  std::sort(r.begin(), r.end());
  std::vector<std::pair<const unsigned char*, const unsigned char*>> m;
  *overlap = 0;
  for (const auto& [b, e] : r) {
    if (!m.empty() && b < m.back().second) *overlap += static_cast<std::size_t>(std::min(e, m.back().second) - b);
    if (!m.empty() && b <= m.back().second) m.back().second = std::max(m.back().second, e);
    else m.emplace_back(b, e);
  }
  return m;
}

// The local experts the router reference sends slots to, as local indices.
std::set<std::int64_t> active_experts(const Params& L, const TensorMap& in) {
  const TensorMap ro = router_reference(L, in);
  const moe::ExpertRange local = moe::layer_experts(L);
  std::set<std::int64_t> a;
  for (std::int64_t i = 0; i < ro.at("ids").numel(); ++i)
    if (const std::int64_t id = ro.at("ids").data<std::int32_t>()[i]; id >= local.begin && id < local.end)
      a.insert(id - local.begin);
  return a;
}

// l2_prefetch: once routed, the front sends each active local expert an even share of the budget
// (3/4 of the emulated H100's 50 MiB), w13's block first and then (at 2) w2's, each byte once,
// after its wait, in pieces of at most 32 KiB spread over its CTAs. The weight blocks here are
// sized for the budget, not the problem (the front only adds offsets to them): whole blocks, w2
// cut short, w13 cut short; and nothing at 0.
TEST(LayerDecode, FrontSendsAnEvenShareOfEachActiveExpertsWeightsToL2) {
  struct Sizes {
    std::int64_t b13, b2;
  };
  const std::int64_t budget = 50ll * 1024 * 1024 / 4 * 3;
  for (const Params& given : {plain(1, "bf16"), ep_slice(3, "bf16"), plain(5, "fp8")})
    for (const Sizes z : {Sizes{64 * 1024 + 48, 100 * 1024}, Sizes{4 << 20, 8 << 20}, Sizes{16 << 20, 1 << 20}})
      for (int mode : {0, 1, 2})
        for (std::int64_t ctas : {1, 3}) {
          const auto p = prepared(given, 7);
          const Params& L = p.problem;
          const std::int64_t El = moe::layer_experts(L).count();
          const std::string what = L.str() + " w13/w2 block " + std::to_string(z.b13) + "/" + std::to_string(z.b2) +
                                   " l2_prefetch=" + std::to_string(mode) + " ctas=" + std::to_string(ctas);
          // Never read: only the prefetches' addresses are checked.
          const auto w13 = std::make_unique_for_overwrite<unsigned char[]>(static_cast<std::size_t>(El * z.b13 + 16));
          const auto w2 = std::make_unique_for_overwrite<unsigned char[]>(static_cast<std::size_t>(El * z.b2 + 16));
          const auto* lo13 = reinterpret_cast<const unsigned char*>((reinterpret_cast<std::uintptr_t>(w13.get()) + 15) / 16 * 16);
          const auto* lo2 = reinterpret_cast<const unsigned char*>((reinterpret_cast<std::uintptr_t>(w2.get()) + 15) / 16 * 16);
          TensorMap in;
          for (const char* k : {"logits", "x", "bias"})
            if (p.inputs.count(k)) in[k] = Tensor::borrow(p.inputs.at(k));
          moe::RefMap ins = moe::refs(in);
          ins["w13"] = moe::TensorRef{const_cast<unsigned char*>(lo13), moe::DType::u8, {El, z.b13}};
          ins["w2"] = moe::TensorRef{const_cast<unsigned char*>(lo2), moe::DType::u8, {El, z.b2}};
          TensorMap out = front_outputs(L);
          std::vector<simt::ptx::L2Prefetch> log;
          simt::ptx::l2_prefetch_log() = &log;
          moe::run_front(moe::Backend::emu, L, Params(decode_config(ctas)).set("l2_prefetch", std::int64_t{mode}), ins,
                         moe::refs(out), moe::LaunchContext{}, {16, 16});
          simt::ptx::l2_prefetch_log() = nullptr;

          const std::set<std::int64_t> active = active_experts(L, in);
          ASSERT_FALSE(active.empty()) << what;
          const std::int64_t share = budget / static_cast<std::int64_t>(active.size()) / 16 * 16;
          const std::int64_t cap13 = mode >= 1 ? std::min(share, z.b13) : 0;
          const std::int64_t cap2 = mode == 2 ? std::min(share - cap13, z.b2) : 0;
          std::vector<std::pair<const unsigned char*, const unsigned char*>> want;
          for (const std::int64_t e : active)
            if (cap13) want.emplace_back(lo13 + e * z.b13, lo13 + e * z.b13 + cap13);
          for (const std::int64_t e : active)
            if (cap2) want.emplace_back(lo2 + e * z.b2, lo2 + e * z.b2 + cap2);
          std::size_t overlap = 0;
          std::vector<std::pair<const unsigned char*, const unsigned char*>> got = covered(log, &overlap);
          // Neighbouring active experts' whole blocks merge into one range: merge what is wanted too.
          std::vector<simt::ptx::L2Prefetch> as_log;
          for (const auto& [b, e] : want) as_log.push_back({b, static_cast<std::uint32_t>(e - b), 0, true});
          std::size_t none = 0;
          EXPECT_EQ(got, covered(as_log, &none)) << what;
          EXPECT_EQ(overlap, 0u) << what << ": bytes sent twice";
          std::set<long long> ctas_used;
          for (const auto& x : log) {
            EXPECT_TRUE(x.after_wait) << what;
            EXPECT_LE(x.bytes, 32u * 1024) << what;
            ctas_used.insert(x.block);
          }
          if (ctas > 1 && log.size() > 512) EXPECT_GT(ctas_used.size(), 1u) << what << ": one CTA sent it all";
          // The front's own work is untouched by it.
          check_map(out.at("up_map"), out.at("offsets"), out.at("src").numel(), 16, what + " up");
        }
}

// Through the layer, l2_prefetch hands the front w13 (and w2): after its wait it sends the router's
// active experts' whole blocks (the test's weights are far below the budget); down's own early
// prefetch (before its wait) is unchanged; the output still validates. path=stages refuses it.
TEST(LayerDecode, TheLayerPrefetchesTheActiveExpertsWeightsWhenAsked) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (const char* dtype : {"bf16", "fp8"})
    for (int mode : {0, 1, 2}) {
      const auto p = prepared(plain(std::string(dtype) == "fp8" ? 16 : 2, dtype), 71);
      Params cfg = decode_config(0).set("l2_prefetch", std::int64_t{mode}).set("fold_combine", std::int64_t{mode == 2});
      std::vector<simt::ptx::L2Prefetch> log;
      simt::ptx::l2_prefetch_log() = &log;
      const auto o = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem, cfg,
                                                                        moe::emu_device_info()));
      simt::ptx::l2_prefetch_log() = nullptr;
      const std::string what = std::string(dtype) + " l2_prefetch=" + std::to_string(mode);
      ASSERT_TRUE(o.validation.ok) << what << ": " << o.validation.summary();
      std::vector<simt::ptx::L2Prefetch> front, early_down;
      for (const auto& x : log) (x.after_wait ? front : early_down).push_back(x);
      EXPECT_FALSE(early_down.empty()) << what << ": down's own prefetch before its wait";
      const std::set<std::int64_t> active = active_experts(p.problem, p.inputs);
      std::vector<simt::ptx::L2Prefetch> want;
      for (const char* w : {"w13", "w2"}) {
        if (mode < (std::string(w) == "w13" ? 1 : 2)) continue;
        const Tensor& t = p.inputs.at(w);
        const std::size_t block = t.nbytes() / static_cast<std::size_t>(t.shape()[0]);
        for (const std::int64_t e : active)
          want.push_back({static_cast<const unsigned char*>(t.raw()) + e * block, static_cast<std::uint32_t>(block), 0, true});
      }
      std::size_t overlap = 0, none = 0;
      EXPECT_EQ(covered(front, &overlap), covered(want, &none)) << what;
      EXPECT_EQ(overlap, 0u) << what;
    }
  const auto& emu = f.need_backend(moe::Backend::emu);
  const Params L = moe::complete(f.problem_params, plain(2, "bf16"), "moe-layer");
  const std::string why = emu.invalid_reason(L, Params(decode_config(0)).set("path", std::string("stages")).set("l2_prefetch", std::int64_t{1}),
                                             moe::emu_device_info());
  EXPECT_NE(why.find("l2_prefetch") , std::string::npos) << why;
  EXPECT_NE(why.find("use path=decode"), std::string::npos) << why;
}

// At decode a bf16 layer is three kernels when combine is folded into down.
TEST(LayerDecode, ThreeKernelsPerCallWithTheFold) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  for (std::int64_t T : {1, 16})
    for (const char* dtype : {"bf16", "fp8"}) {
      const auto p = prepared(plain(T, dtype), 90 + T);
      const auto o = moe::tuner::run_emu(p, moe::tuner::complete_config(f, moe::Backend::emu, p.problem,
                                                                        decode_config(0).set("fold_combine", std::int64_t{1}),
                                                                        moe::emu_device_info()));
      EXPECT_TRUE(o.validation.ok) << o.validation.summary();
      const std::string k = std::string("fp8") == dtype ? "gmm_fp8_mma_kernel" : "gmm_mma_kernel";
      EXPECT_EQ(o.kernels, (std::vector<std::string>{"decode front kernel", k, k})) << T << " " << dtype;
    }
}

TEST(LayerDecode, FoldInvalidWithAReason) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const moe::DeviceInfo h100 = moe::emu_device_info();
  const auto& emu = f.need_backend(moe::Backend::emu);
  const auto problem = [&](Params L) { return moe::complete(f.problem_params, L, "moe-layer"); };
  Params stages = decode_config(0).set("fold_combine", std::int64_t{1});
  stages.set("path", std::string("stages"));
  const std::string path = emu.invalid_reason(problem(plain(4, "bf16")), stages, h100);
  EXPECT_NE(path.find("use path=decode"), std::string::npos) << path;
  // A biased down sums its bias in split-K's finalize, which the fold does not run.
  const Params biased = plain(3, "bf16").set("bias2", std::int64_t{1});
  const Params fold = decode_config(0).set("fold_combine", std::int64_t{1});
  const std::string bias = emu.invalid_reason(problem(biased), Params(fold).set("gmm_down", std::string("split_k=2")), h100);
  EXPECT_NE(bias.find("split_k=1 with a biased down"), std::string::npos) << bias;
  EXPECT_EQ(emu.invalid_reason(problem(biased), fold, h100), "");
  // Only the 16-row tiles carry the fold, and no 4-bit kernel does.
  const std::string tall = emu.invalid_reason(problem(plain(3, "bf16")), Params(fold).set("gmm_down", std::string("block_m=32;block_n=128;warps_m=1;warps_n=4;stages=4")), h100);
  EXPECT_NE(tall.find("use block_m=16"), std::string::npos) << tall;
  const std::string w4 = emu.invalid_reason(problem(plain(3, "mxfp4").set("intermediate", std::int64_t{64})), fold, h100);
  EXPECT_NE(w4.find("4-bit kernels do not fold"), std::string::npos) << w4;
}

TEST(LayerDecode, InvalidWithAReasonWhereTheFrontCannotRun) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const moe::DeviceInfo h100 = moe::emu_device_info();
  const auto problem = [&](Params L) { return moe::complete(f.problem_params, L, "moe-layer"); };
  const auto& emu = f.need_backend(moe::Backend::emu);
  EXPECT_EQ(emu.invalid_reason(problem(deepseek_like(64, "bf16")), decode_config(0), h100), "");
  const std::string many = emu.invalid_reason(problem(deepseek_like(65, "bf16")), decode_config(0), h100);
  EXPECT_NE(many.find("at most 64 tokens"), std::string::npos) << many;
  const std::string cpu = f.need_backend(moe::Backend::cpu)
                              .invalid_reason(problem(deepseek_like(4, "bf16")), decode_config(0), moe::cpu_device_info(1));
  EXPECT_NE(cpu.find("cpu backend"), std::string::npos) << cpu;
  // 2000 experts: wider than any row the front compiles.
  const std::string wide = emu.invalid_reason(problem(plain(4, "bf16").set("experts", std::int64_t{2000})),
                                              decode_config(0), h100);
  EXPECT_NE(wide.find("no row shape"), std::string::npos) << wide;
  // The stages path stays valid where the front is not.
  Params stages = decode_config(0);
  stages.set("path", std::string("stages"));
  EXPECT_EQ(emu.invalid_reason(problem(deepseek_like(65, "bf16")), stages, h100), "");
}

TEST(LayerDecode, TheLayerSpaceOffersBothPathsAndTheFold) {
  const moe::FamilyDesc& f = moe::family("moe-layer");
  const Params L = moe::complete(f.problem_params, deepseek_like(8, "bf16"), "moe-layer");
  int decode = 0, folded = 0;
  for (const Params& c : f.need_backend(moe::Backend::emu).space(L, moe::emu_device_info(), false))
    decode += moe::decode_path(c), folded += moe::fold_combine(c);
  // The emulator runs the L2 prefetch once, folded (it times nothing).
  EXPECT_EQ(decode, 3);
  EXPECT_EQ(folded, 2);
  if (const moe::BackendImpl* cuda = f.backend(moe::Backend::cuda)) {
    int with_pdl = 0, n = 0;
    std::array<int, 3> by_l2{};
    folded = 0;
    for (const Params& c : cuda->space(L, moe::emu_device_info(), false))
      if (moe::decode_path(c))
        ++n, with_pdl += c.i("pdl") == 1, folded += moe::fold_combine(c), ++by_l2.at(moe::l2_prefetch(c));
    // fold x l2_prefetch x pdl.
    EXPECT_EQ(n, 12);
    EXPECT_EQ(with_pdl, 6);
    EXPECT_EQ(folded, 6);
    EXPECT_EQ(by_l2, (std::array<int, 3>{4, 4, 4}));
  }
  // Past 64 tokens only the stages remain.
  const Params big = moe::complete(f.problem_params, deepseek_like(65, "bf16"), "moe-layer");
  for (const Params& c : f.need_backend(moe::Backend::emu).space(big, moe::emu_device_info(), false))
    EXPECT_FALSE(moe::decode_path(c)) << c.str();
}

}  // namespace
