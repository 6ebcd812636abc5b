// The quantizing gather (kernels/dispatch/cuda_gather_fp8_kernels.cuh) on the cpu under the
// simt emulator, against the fp8 dispatch reference: x with all-zero groups, NaN, infinities and
// values at and beyond 448, fp32 and ue8m0 scales, padding rows, rows past those in use left
// alone, D/128 not a multiple of four (idle lanes), random thread orders.
#include "emu/simt_cuda.hpp"  // first: the kernel header below compiles against its CUDA names
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/rng.hpp"
#include "dispatch/cuda_gather_fp8_kernels.cuh"
#include "dispatch/family.hpp"
#include "tuner/measure/harness.hpp"

namespace {

using namespace moe;
namespace qk = moe::dispatch_cuda::gather_fp8_kernels;

Params problem(std::int64_t T, std::int64_t D, const std::string& fmt) {
  return Params{{"tokens", T},
                {"experts", std::int64_t{10}},
                {"topk", std::int64_t{3}},
                {"shared", std::int64_t{1}},
                {"hidden", D},
                {"dtype", std::string("fp8")},
                {"align", std::int64_t{8}},
                {"scale_fmt", fmt}};
}

TEST(DispatchFp8Emulation, QuantizingGatherMatchesTheReference) {
  for (const char* fmt : {"fp32", "ue8m0"})
    for (std::int64_t D : {128, 640, 1024})
      for (std::int64_t spare : {0, 9}) {
        InputOptions opt;
        opt.seed = static_cast<std::uint64_t>(D + spare);
        const auto p = tuner::prepare(dispatch_family(), problem(21, D, fmt), opt);
        const Tensor& want_q = p.reference.at("x_sorted");
        const Tensor& want_s = p.reference.at("x_scale");
        const std::int64_t R = want_q.shape()[0], rows = R + spare, G = D / 128;
        std::vector<std::int32_t> src(p.reference.at("src").data<std::int32_t>(),
                                      p.reference.at("src").data<std::int32_t>() + R);
        src.resize(static_cast<std::size_t>(rows), 0x7f7f7f7f);
        const std::int32_t used = static_cast<std::int32_t>(R);
        std::vector<std::uint8_t> q(static_cast<std::size_t>(rows * D) + 64, 0xEE);
        std::vector<float> sc(static_cast<std::size_t>(rows * G) + 8, -7.0f);
        const qk::QDev d{p.inputs.at("x").data<std::uint16_t>(), src.data(), q.data(), sc.data(), rows, 21 * 4, 4, D,
                         spare ? &used : nullptr, std::string(fmt) == "ue8m0"};
        for (int threads : {64, 256}) {
          std::fill(q.begin(), q.end(), 0xEE);
          std::fill(sc.begin(), sc.end(), -7.0f);
          const std::string what = std::string(fmt) + " D=" + std::to_string(D) + " spare=" + std::to_string(spare) +
                                   " threads=" + std::to_string(threads);
          ASSERT_NO_THROW(simt::launch(qk::quant_gather_blocks(rows, D, threads), threads, 0,
                                       [&] { threads == 64 ? qk::quant_gather_kernel<64>(d) : qk::quant_gather_kernel<256>(d); }, 3))
              << what;
          // Bit for bit: the same division and rounding as the reference.
          EXPECT_EQ(std::memcmp(q.data(), want_q.raw(), want_q.nbytes()), 0) << what;
          EXPECT_EQ(std::memcmp(sc.data(), want_s.raw(), want_s.nbytes()), 0) << what;
          for (std::size_t i = static_cast<std::size_t>(R * D); i < q.size(); ++i) ASSERT_EQ(q[i], 0xEE) << what << " at " << i;
          for (std::size_t i = static_cast<std::size_t>(R * G); i < sc.size(); ++i) ASSERT_EQ(sc[i], -7.0f) << what;
        }
      }
}

}  // namespace
