// fp8 gmm up's silu*up + requantization pass (kernels/gmm/fp8_silu_quant_kernels.cuh) on the
// cpu under the simt emulator, against DESIGN.md 1.6's definition computed here: silu(gate) *
// up in fp64 rounded to fp32, then quantized per 128 group. Rows include all-zero (padding)
// rows, groups of tiny and of huge values, I/128 not a multiple of four; rows past those in use
// must stay untouched. Codes within one e4m3 step and scales within one ulp, as validation allows
// (the kernel's fp32 silu may land a value on the other side of a rounding boundary). Split-K
// slabs are summed first.
#include "emu/simt_cuda.hpp"  // first: the kernel header below compiles against its CUDA names
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/e4m3.hpp"
#include "common/fp8_validate.hpp"
#include "common/rng.hpp"
#include "gmm/detail.hpp"
#include "gmm/fp8_silu_quant_kernels.cuh"
#include "moe/tensor.hpp"

namespace {

using namespace moe;
namespace fk = moe::gmm::fp8_kernels;

TEST(GmmFp8Emulation, SiluUpQuantMatchesTheDefinition) {
  for (const bool ue8m0 : {false, true})
    for (int I : {128, 640}) {
      const std::int64_t rows = 37, used = 33, G = I / 128;
      Rng rng(static_cast<std::uint64_t>(I) + ue8m0);
      std::vector<float> gu(static_cast<std::size_t>(rows * 2 * I));
      for (std::int64_t r = 0; r < rows; ++r) {
        const double mag = r % 5 == 0 ? 0.0 : r % 7 == 0 ? 1e-3 : r % 11 == 0 ? 40.0 : 2.0;  // zero, tiny, beyond 448
        for (std::int64_t c = 0; c < 2 * I; ++c) gu[r * 2 * I + c] = static_cast<float>(mag * rng.normal());
      }
      Tensor want_q(DType::e4m3, {used, I}), want_s(DType::f32, {used, G});
      for (std::int64_t r = 0; r < used; ++r) {
        std::vector<float> h(static_cast<std::size_t>(I));
        for (int c = 0; c < I; ++c) {
          const double g = gu[r * 2 * I + c], u = gu[r * 2 * I + I + c];
          h[c] = static_cast<float>(g / (1 + std::exp(-g)) * u);
        }
        fp8::quantize_row(h.data(), I, want_q.data<std::uint8_t>() + r * I, want_s.data<float>() + r * G, ue8m0);
      }
      const std::int32_t used32 = static_cast<std::int32_t>(used);
      // Split K (the decode kernel's unfused up): three slabs, halves of gate|up around a slab of
      // zeros, sum to the same rows exactly in split order.
      const std::size_t slab = gu.size();
      std::vector<float> split(3 * slab, 0.0f);
      for (std::size_t i = 0; i < slab; ++i) split[i] = split[2 * slab + i] = gu[i] * 0.5f;
      for (int splits : {1, 3})
        for (int threads : {64, 256}) {
          Tensor q(DType::e4m3, {rows, I}), s(DType::f32, {rows, G});
          poison_host(q.ref());
          poison_host(s.ref());
          fk::SiluQuantArgs a{gu.data(), q.data<std::uint8_t>(), s.data<float>(), rows, I, &used32, ue8m0};
          if (splits > 1) {
            a.gu = split.data();
            a.split = splits;
            a.split_stride = static_cast<long long>(slab);
          }
          const std::string what = std::string(ue8m0 ? "ue8m0" : "fp32") + " I=" + std::to_string(I) +
                                   " threads=" + std::to_string(threads) + " splits=" + std::to_string(splits);
          ASSERT_NO_THROW(simt::launch(fk::silu_quant_blocks(rows, I, threads), threads, 0,
                                       [&] {
                                         if (splits > 1) threads == 64 ? fk::silu_quant_kernel<64, true>(a) : fk::silu_quant_kernel<256, true>(a);
                                         else threads == 64 ? fk::silu_quant_kernel<64>(a) : fk::silu_quant_kernel<256>(a);
                                       },
                                       4))
              << what;
          // Rows past offsets[E] keep their poison.
          for (std::int64_t i = used * I; i < rows * I; ++i) ASSERT_TRUE(is_poison(DType::e4m3, q.data<std::uint8_t>() + i)) << what;
          Tensor gq(DType::e4m3, {used, I}), gs(DType::f32, {used, G});
          std::memcpy(gq.raw(), q.raw(), gq.nbytes());
          std::memcpy(gs.raw(), s.raw(), gs.nbytes());
          for (const Check& c : check_quantized("h", gq, gs, want_q, want_s, ue8m0, nullptr, moe::gmm::kHScaleRtol))
            EXPECT_TRUE(c.ok) << what << ": " << c.tensor << " " << c.detail;
        }
    }
}

}  // namespace
