#pragma once
// OCP FP8 E4M3FN (DESIGN.md 1.6) and the per-group activation scale, one source for the host,
// the cuda kernels and the simt emulator: integer bit work only, so the three agree bit for bit.
// from_float is the rule of PTX's cvt.rn.satfinite.e4m3x2.f32; the kernels' pair conversion
// (pack2) issues that instruction on sm_89 and later, one instead of about twenty integer
// instructions and branches per value, which made the quantizing gather compute-bound.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MOE_FP8_HD __host__ __device__ __forceinline__
#else
#define MOE_FP8_HD inline
#endif

namespace moe::fp8 {

inline constexpr float kMax = 448.0f;       // largest finite e4m3
inline constexpr int kGroup = 128;          // activations: one scale per row and 128 K elements
inline constexpr int kBlock = 128;          // weights: one scale per 128x128 block
inline constexpr std::uint8_t kNaN = 0x7F;  // the code a NaN input becomes
inline constexpr float kMinAmax = 1e-10f;   // an all-zero group still gets a finite scale

MOE_FP8_HD std::uint32_t f32_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
MOE_FP8_HD float f32_from(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Exact: every e4m3 value is an f32.
MOE_FP8_HD float to_float(std::uint8_t q) {
  const std::uint32_t sign = static_cast<std::uint32_t>(q & 0x80) << 24;
  const std::uint32_t e = (q >> 3) & 15, m = q & 7;
  if (e == 15 && m == 7) return f32_from(sign | 0x7FC00000u);
  if (e != 0) return f32_from(sign | ((e + 120) << 23) | (m << 20));
  // Subnormal m/8 * 2^-6: normalise the mantissa into an f32 (m = 0 gives a signed zero).
  if (m == 0) return f32_from(sign);
  std::uint32_t shift = 0;
  while (!(m << shift & 4)) ++shift;  // leading one of the 3-bit mantissa to bit 2
  const std::uint32_t exp = 127 - 7 - shift;      // 2^(-7-shift) for the leading one
  const std::uint32_t frac = ((m << shift) & 3) << 21;  // the bits below it
  return f32_from(sign | (exp << 23) | frac);
}

// Round to nearest even, saturating finite overflow and infinities to +-448, NaN to NaN.
MOE_FP8_HD std::uint8_t from_float(float v) {
  const std::uint32_t u = f32_bits(v);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kNaN;
  if (a >= 0x43E00000u) return sign | 0x7E;  // |v| >= 448: every such value rounds or clamps to 448
  const std::uint32_t e = a >> 23, mant = (a & 0x7FFFFFu) | (e ? 0x800000u : 0);
  if (e >= 121) {  // normal in e4m3: keep 3 of 23 mantissa bits; a carry steps the exponent
    std::uint32_t code = ((e - 120) << 3) | ((a >> 20) & 7);
    const std::uint32_t rest = a & 0xFFFFFu;
    if (rest > 0x80000u || (rest == 0x80000u && (code & 1))) ++code;
    return sign | static_cast<std::uint8_t>(code);
  }
  // Subnormal in e4m3: |v| in units of 2^-9 is mant * 2^(e - 150 + 9); rounding up to 8 gives
  // the smallest normal, whose code is 8 too.
  const std::uint32_t shift = 141 - (e ? e : 1);
  if (shift >= 25) return sign;
  std::uint32_t q = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  return sign | static_cast<std::uint8_t>(q);
}

// The smallest power of two >= s (ue8m0 scales hold only an exponent); s positive or inf.
MOE_FP8_HD float ceil_pow2(float s) {
  const std::uint32_t u = f32_bits(s);
  if ((u & 0x7FFFFFu) == 0 || (u >> 23) >= 255) return s;
  if ((u >> 23) == 0) return f32_from(1u << 23);  // subnormal: 2^-126 is the next power of two up
  return f32_from(((u >> 23) + 1) << 23);
}

// DESIGN.md 1.6: s = max(amax, 1e-10) / 448, rounded up to a power of two for ue8m0.
// amax is the group's max |x| with NaN skipped (as fmaxf), +inf when the group holds one.
MOE_FP8_HD float group_scale(float amax, bool ue8m0) {
  const float s = (amax > kMinAmax ? amax : kMinAmax) / kMax;
  return ue8m0 ? ceil_pow2(s) : s;
}

// fmaxf's rule, spelled out so host and device read the same: NaN never wins.
MOE_FP8_HD float amax_step(float amax, float x) {
  const float a = x < 0 ? -x : x;
  return a > amax ? a : amax;  // NaN compares false and is skipped
}

// One row's group of n <= 128 values: the scale, and the codes q = e4m3(x / s).
MOE_FP8_HD float quantize_group(const float* x, int n, std::uint8_t* q, bool ue8m0) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = amax_step(amax, x[i]);
  const float s = group_scale(amax, ue8m0);
  for (int i = 0; i < n; ++i) q[i] = from_float(x[i] / s);
  return s;
}

// A row of K values (K a multiple of 128): codes q[K] and the K/128 group scales, K-major.
MOE_FP8_HD void quantize_row(const float* x, std::int64_t K, std::uint8_t* q, float* scales, bool ue8m0) {
  for (std::int64_t g = 0; g < K / kGroup; ++g) scales[g] = quantize_group(x + g * kGroup, kGroup, q + g * kGroup, ue8m0);
}

// Four values divided by their group's scale, as four codes in one word (lowest first): the
// kernels store 16 codes of a row with one 16-byte write.
// Two values divided by their group's scale as two codes, a's in the low byte.
MOE_FP8_HD unsigned pack2(float a, float b, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  // The instruction's first source goes to the high byte.
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(b / scale), "f"(a / scale));
  return r;
#else
  return static_cast<unsigned>(from_float(a / scale)) | static_cast<unsigned>(from_float(b / scale)) << 8;
#endif
}
MOE_FP8_HD unsigned pack4(const float* v, float scale) {
  return pack2(v[0], v[1], scale) | pack2(v[2], v[3], scale) << 16;
}

}  // namespace moe::fp8
