#pragma once
// What the 4-bit decode kernel needs beyond cuda_primitives.cuh: 16- and 32-bit shared loads,
// the byte permute (prmt) that spreads a byte's two nibbles into the halves of a bf16 pair, the
// bf16x2 fma that turns those bits into values (fma.rn.bf16x2, sm_80+; subnormal inputs are
// kept, which mxfp4's code 0.5 needs), and the two scale formats as fp32. Under the emulator
// (GMM_EMULATED_PRIMITIVES) the same on host memory, written from the PTX definitions.
#include <cstdint>

#ifdef GMM_EMULATED_PRIMITIVES
#include <cstring>

namespace moe::gmm::emulated {

struct U32x4 {
  std::uint32_t x, y, z, w;
};
inline U32x4 lds_u32x4(const unsigned char* p) {
  simt::ptx::need_aligned(p, 16, "16-byte shared load");
  U32x4 v;
  std::memcpy(&v, p, 16);
  return v;
}
inline std::uint32_t lds_w4(const unsigned char* p) {
  simt::ptx::need_aligned(p, 4, "32-bit shared load");
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// prmt.b32 (default mode): result byte i is byte (sel >> 4i) & 7 of {b:a} (a the low four),
// or, when bit 3 of that selector nibble is set, that byte's sign bit copied to all 8 bits.
inline std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  const std::uint64_t both = (static_cast<std::uint64_t>(b) << 32) | a;
  std::uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned s = (sel >> (4 * i)) & 0xFu;
    std::uint32_t byte = static_cast<std::uint32_t>(both >> (8 * (s & 7u))) & 0xFFu;
    if (s & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
    r |= byte << (8 * i);
  }
  return r;
}
// Each half a * b + c, rounded once to bf16 (the products the kernel forms are exact).
inline std::uint32_t fma_bf16x2(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  auto h = [](std::uint32_t v, int i) { return simt::ptx::half_to_float<true>(static_cast<std::uint16_t>(v >> (16 * i))); };
  return simt::ptx::pack2<true>(std::fma(h(a, 0), h(b, 0), h(c, 0)), std::fma(h(a, 1), h(b, 1), h(c, 1)));
}
inline float bits_f32(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace moe::gmm::emulated

#else

namespace moe::gmm::cuda {

struct U32x4 {
  std::uint32_t x, y, z, w;
};
GMM_DEVICE U32x4 lds_u32x4(const unsigned char* p) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  return {v.x, v.y, v.z, v.w};
}
GMM_DEVICE std::uint32_t lds_w4(const unsigned char* p) { return *reinterpret_cast<const std::uint32_t*>(p); }
GMM_DEVICE std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) { return __byte_perm(a, b, sel); }
GMM_DEVICE std::uint32_t fma_bf16x2(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}
GMM_DEVICE float bits_f32(std::uint32_t b) { return __uint_as_float(b); }

}  // namespace moe::gmm::cuda

#endif

namespace moe::gmm::GMM_KERNEL_NAMESPACE::w4 {

// Selector putting byte p of `lo` in the result's byte 0 and byte p of `hi` in byte 2, bytes 1
// and 3 the sign of those bytes (zero: the inputs hold nibbles).
constexpr std::uint32_t spread_sel(int p) {
  return static_cast<std::uint32_t>(p | ((8 | p) << 4) | ((4 + p) << 8) | ((12 + p) << 12));
}

// A 32-bit word of eight codes along K (byte i: element 2i low nibble, 2i+1 high) as four bf16
// pairs, pair i = the two codes of byte i, the even one in the low half (as A's pairs are).
// int4: (q - z) exactly: 0x4300 | q is the bf16 128 + q, less 128 + z (neg_base: -(128 + z) in
// both halves).
GMM_DEVICE void int4x8(std::uint32_t w, std::uint32_t neg_base, std::uint32_t (&b)[4]) {
  const std::uint32_t e = w & 0x0F0F0F0Fu, o = (w >> 4) & 0x0F0F0F0Fu;
#pragma unroll
  for (int p = 0; p < 4; ++p) b[p] = fma_bf16x2(prmt(e, o, spread_sel(p)) | 0x43004300u, 0x3F803F80u, neg_base);
}
// mxfp4: code s e1 e0 m, moved to bf16 bits s at 15, e1 e0 m at 8..6, is the e2m1 value times
// 2^-126 (code 1, 0.5, a subnormal); times 2^126 in bf16 (0x7E80, exact) it is the value.
// The e8m0 scale is applied to the fp32 sums.
GMM_DEVICE void mxfp4x8(std::uint32_t w, std::uint32_t (&b)[4]) {
  const std::uint32_t e = w & 0x0F0F0F0Fu, o = (w >> 4) & 0x0F0F0F0Fu;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const std::uint32_t u = prmt(e, o, spread_sel(p));
    const std::uint32_t bits = ((u << 6) & 0x01C001C0u) | ((u << 12) & 0x80008000u);
    b[p] = fma_bf16x2(bits, 0x7E807E80u, 0x80008000u);
  }
}
// e8m0 as fp32: 2^(e-127); e = 0 is the subnormal 2^-127 (255, NaN, is refused with the inputs).
GMM_DEVICE float e8m0_f32(std::uint32_t e) { return bits_f32(e == 0 ? 0x00400000u : e << 23); }
GMM_DEVICE float bf16_f32(std::uint32_t b) { return bits_f32(b << 16); }

}  // namespace moe::gmm::GMM_KERNEL_NAMESPACE::w4
