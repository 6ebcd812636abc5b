// moe::prepare_weights: w13 and bias13 moved between the split and interleaved row orders, and
// a split problem's weights prepared into an interleaved one's giving the same layer output on
// the cpu backend, bit for bit; its refusals.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "moe/weights.hpp"
#include "tuner/measure/harness.hpp"

namespace moe {
namespace {

TensorRef ref(Tensor& t) { return TensorRef{t.raw(), t.dtype(), t.shape()}; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Row r of w13 [E, 2I, D] holds the value 1000 * e + r in each of its D elements (exact in f32).
Tensor numbered(std::int64_t E, std::int64_t I, std::int64_t D) {
  Tensor t(DType::f32, {E, 2 * I, D});
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = 0; r < 2 * I; ++r)
      for (std::int64_t d = 0; d < D; ++d) t.set((e * 2 * I + r) * D + d, 1000.0 * e + r);
  return t;
}

TEST(PrepareWeights, InterleavesGateAndUpRowsInBlocksAndBack) {
  const std::int64_t E = 2, I = 4, D = 3;
  Tensor split = numbered(E, I, D), inter(DType::f32, {E, 2 * I, D}), back(DType::f32, {E, 2 * I, D});
  // Block 1 (gpt-oss): gate 0, up 0, gate 1, up 1, ... i.e. split rows 0, 4, 1, 5, 2, 6, 3, 7.
  prepare_weights(ref(split), {}, ref(inter), {true, 1});
  const double want1[] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = 0; r < 2 * I; ++r)
      for (std::int64_t d = 0; d < D; ++d)
        EXPECT_EQ(inter.get((e * 2 * I + r) * D + d), 1000.0 * e + want1[r]) << e << " " << r;
  // Block 2: gate 0-1, up 0-1, gate 2-3, up 2-3.
  prepare_weights(ref(split), {}, ref(inter), {true, 2});
  const double want2[] = {0, 1, 4, 5, 2, 3, 6, 7};
  for (std::int64_t r = 0; r < 2 * I; ++r) EXPECT_EQ(inter.get((2 * I + r) * D), 1000.0 + want2[r]) << r;
  // Back to split, and from one block size straight to another.
  prepare_weights(ref(inter), {true, 2}, ref(back), {});
  EXPECT_EQ(std::memcmp(back.raw(), split.raw(), split.nbytes()), 0);
  Tensor one(DType::f32, {E, 2 * I, D});
  prepare_weights(ref(inter), {true, 2}, ref(one), {true, 1});
  for (std::int64_t r = 0; r < 2 * I; ++r) EXPECT_EQ(one.get(r * D), want1[r]) << r;
  // bias13 [E, 2I] moves the same way.
  Tensor b(DType::bf16, {E, 2 * I}), bi(DType::bf16, {E, 2 * I});
  for (std::int64_t i = 0; i < b.numel(); ++i) b.set(i, static_cast<double>(i));
  prepare_weights(ref(b), {}, ref(bi), {true, 1});
  for (std::int64_t r = 0; r < 2 * I; ++r) EXPECT_EQ(bi.get(2 * I + r), 2.0 * I + want1[r]) << r;
}

TEST(PrepareWeights, RefusesWhatItCannotDoInOneLine) {
  Tensor w = numbered(1, 6, 2), o(DType::f32, {1, 12, 2}), small(DType::f32, {1, 10, 2}), odd(DType::f32, {1, 7, 2});
  Tensor half(DType::bf16, {1, 12, 2});
  EXPECT_NE(error_of([&] { prepare_weights(ref(w), {}, ref(o), {true, 4}); }).find("block 4 does not divide the 6"),
            std::string::npos);
  EXPECT_NE(error_of([&] { prepare_weights(ref(w), {}, ref(small), {true, 1}); }).find("input's dtype and shape"),
            std::string::npos);
  EXPECT_NE(error_of([&] { prepare_weights(ref(w), {}, ref(half), {true, 1}); }).find("input's dtype and shape"),
            std::string::npos);
  EXPECT_NE(error_of([&] { prepare_weights(ref(odd), {}, ref(odd), {true, 1}); }).find("2I of them"), std::string::npos);
  EXPECT_NE(error_of([&] { prepare_weights(ref(w), {}, ref(w), {true, 1}); }).find("overlaps"), std::string::npos);
  EXPECT_TRUE(w13_layout_of(Params{{"w13_layout", std::string("interleaved")}, {"w13_block", std::int64_t{128}}}).interleaved);
  EXPECT_EQ(w13_layout_of(Params{{"w13_layout", std::string("interleaved")}, {"w13_block", std::int64_t{128}}}).block, 128);
  EXPECT_FALSE(w13_layout_of(Params{}).interleaved);
}

// gpt-oss's layer at small shapes (hidden 96: a multiple of 32, not of 128).
Params oai_layer(const char* layout, std::int64_t block) {
  return Params{{"tokens", std::int64_t{23}},  {"dtype", std::string("bf16")}, {"experts", std::int64_t{8}},
                {"topk", std::int64_t{2}},     {"hidden", std::int64_t{96}},   {"intermediate", std::int64_t{64}},
                {"align", std::int64_t{8}},    {"activation", std::string("swiglu_oai")}, {"limit", 1.5},
                {"w13_layout", std::string(layout)}, {"w13_block", block}, {"bias13", std::int64_t{1}},
                {"bias2", std::int64_t{1}}};
}

TEST(PrepareWeights, APreparedSplitLayerGivesTheSplitLayersOutput) {
  const FamilyDesc& f = family("moe-layer");
  const DeviceInfo dev = cpu_device_info(2);
  InputOptions opt;
  opt.seed = 17;
  const auto split = tuner::prepare(f, oai_layer("split", 1), opt);
  const auto cfg = tuner::complete_config(f, Backend::cpu, split.problem, {}, dev);
  const auto want = tuner::run_cpu(split, cfg, 2);
  ASSERT_TRUE(want.validation.ok) << want.validation.summary();
  for (std::int64_t block : {1, 16}) {
    TensorMap given;
    for (auto& [k, v] : split.inputs) given[k] = Tensor::borrow(v);
    for (const char* name : {"w13", "bias13"}) {
      Tensor t(split.inputs.at(name).dtype(), split.inputs.at(name).shape());
      Tensor from = Tensor::borrow(split.inputs.at(name));
      prepare_weights(ref(from), {}, ref(t), {true, block});
      given[name] = std::move(t);
    }
    const auto inter = tuner::prepare(f, oai_layer("interleaved", block), opt, std::move(given));
    const auto got = tuner::run_cpu(inter, cfg, 2);
    EXPECT_TRUE(got.validation.ok) << block << ": " << got.validation.summary();
    const Tensor &a = want.outputs.at("out"), &b = got.outputs.at("out");
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "block " << block;
    // The split weights read as interleaved are another layer: its reference says so.
    TensorMap unprepared;
    for (auto& [k, v] : split.inputs) unprepared[k] = Tensor::borrow(v);
    const auto wrong = tuner::prepare(f, oai_layer("interleaved", block), opt, std::move(unprepared));
    EXPECT_FALSE(f.validate(wrong.problem, wrong.inputs, want.outputs, wrong.reference).ok) << block;
  }
}

}  // namespace
}  // namespace moe
