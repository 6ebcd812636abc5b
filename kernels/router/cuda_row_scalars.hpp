#pragma once
// Scalar pieces of the router's row algorithm, spelled once for the device and once for the host
// (where the tests run them under the warp emulator): bit casts, IEEE min/max that ignore NaN,
// exp, the sigmoid's reciprocal, half widening, and the order keys that rank selection scores.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define ROUTER_FN __device__ __forceinline__
#else
#include <cmath>

#include "moe/dtype.hpp"
#define ROUTER_FN inline
#endif

#include "router/cuda_row_args.hpp"

namespace moe::router::kern {

#if !defined(__CUDACC__)
using std::max;
using std::min;
#endif

ROUTER_FN float u2f(unsigned u) {
#if defined(__CUDACC__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

ROUTER_FN unsigned f2u(float f) {
#if defined(__CUDACC__)
  return __float_as_uint(f);
#else
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ROUTER_FN bool is_nan(float x) { return x != x; }
ROUTER_FN float neg_inf() { return u2f(0xFF800000u); }
ROUTER_FN float quiet_nan() { return u2f(0x7FC00000u); }
// IEEE fmax: a NaN operand is ignored.
ROUTER_FN float fmax_ignoring_nan(float a, float b) { return (is_nan(b) || a >= b) ? a : b; }
// IEEE fmin (one FMNMX on the device): a NaN operand is ignored.
ROUTER_FN float fmin_ignoring_nan(float a, float b) {
#if defined(__CUDACC__)
  return fminf(a, b);
#else
  return std::fmin(a, b);
#endif
}

ROUTER_FN float exp_f32(float x) {
#if defined(__CUDACC__)
  return expf(x);
#else
  return std::exp(x);
#endif
}

// 1/x for the sigmoid's x = 1 + exp(-logit) >= 1. The device takes the fast reciprocal
// (within 2 ulp; 0 past 2^126, where the sigmoid is below 1e-38 anyway): the IEEE division's
// range check and slow-path branch per expert were a tenth of a row's instructions.
ROUTER_FN float sigmoid_recip(float x) {
#if defined(__CUDACC__)
  return __fdividef(1.0f, x);
#else
  return 1.0f / x;
#endif
}

ROUTER_FN float half_to_float(unsigned h) {
#if defined(__CUDACC__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  return moe::f16_to_float(static_cast<std::uint16_t>(h));
#endif
}

// Order-preserving map of a selection score to an unsigned key: NaN ranks as -inf and
// -0 as +0 (they compare equal as floats, so they must tie). Every real key is >= kMinKey.
inline constexpr unsigned kMinKey = 0x007FFFFFu;  // the key of -inf
ROUTER_FN unsigned order_key(float c) {
  // c + 0 turns -0 into +0 (round to nearest) and keeps every other value; then negative
  // floats flip all bits, positive ones only the sign bit.
  const unsigned u = f2u(is_nan(c) ? neg_inf() : c + 0.0f);
  return u ^ (static_cast<unsigned>(static_cast<int>(u) >> 31) | 0x80000000u);
}
ROUTER_FN float key_value(unsigned k) { return u2f((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k); }

}  // namespace moe::router::kern
