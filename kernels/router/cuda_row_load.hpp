#pragma once
// Loading a row: the logits of one row group as raw vectors (up to 16 bytes a load), widened to
// fp32, and the bias beside them. RowLayout fixes where each expert of the row sits: lane `sub`
// of a row group of LANES lanes holds experts j*LANES*V + sub*V + v (chunk j < EPL/V, v < V).
#include "router/cuda_row_scalars.hpp"

namespace moe::router::kern {

template <int BYTES>
struct Raw {
  unsigned w[BYTES / 4];
};
template <>
struct Raw<2> {
  unsigned short h;
};

template <int BYTES>
ROUTER_FN void load_raw(Raw<BYTES>& r, const unsigned char* p) {
#if defined(__CUDACC__)
  if constexpr (BYTES == 16) {
    const uint4 v = *(reinterpret_cast<const uint4*>(p));
    r.w[0] = v.x, r.w[1] = v.y, r.w[2] = v.z, r.w[3] = v.w;
  } else if constexpr (BYTES == 8) {
    const uint2 v = *(reinterpret_cast<const uint2*>(p));
    r.w[0] = v.x, r.w[1] = v.y;
  } else if constexpr (BYTES == 4) {
    r.w[0] = *(reinterpret_cast<const unsigned*>(p));
  } else {
    r.h = *(reinterpret_cast<const unsigned short*>(p));
  }
#else
  std::memcpy(&r, p, BYTES);
#endif
}

// Element v of a raw vector, widened to float (bf16/f16 convert exactly).
template <int ESIZE, int BYTES>
ROUTER_FN float raw_elem(const Raw<BYTES>& r, int v, int bf16) {
  if constexpr (ESIZE == 4) {
    return u2f(r.w[v]);
  } else {
    unsigned h;
    if constexpr (BYTES == 2) h = r.h;
    else h = (r.w[v >> 1] >> ((v & 1) * 16)) & 0xFFFFu;  // little endian: lower address, low half
    return bf16 ? u2f(h << 16) : half_to_float(h);
  }
}

// V consecutive biases from a V-aligned index (16-byte aligned for V >= 4).
template <int V>
ROUTER_FN void load_bias(float* b, const float* p) {
#if defined(__CUDACC__)
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int q = 0; q < V / 4; ++q) {
      const float4 x = *(reinterpret_cast<const float4*>(p) + q);
      b[4 * q] = x.x, b[4 * q + 1] = x.y, b[4 * q + 2] = x.z, b[4 * q + 3] = x.w;
    }
  } else if constexpr (V == 2) {
    const float2 x = *(reinterpret_cast<const float2*>(p));
    b[0] = x.x, b[1] = x.y;
  } else {
    b[0] = *(p);
  }
#else
  for (int i = 0; i < V; ++i) b[i] = p[i];
#endif
}

template <int LANES, int EPL, int V, int ESIZE>
struct RowLayout {
  static_assert(LANES >= 1 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "lanes: a power of two up to 32");
  static_assert(V == 1 || V == 2 || V == 4 || V == 8, "vec: 1, 2, 4 or 8 elements");
  static_assert(EPL % V == 0 && EPL <= 32, "epl: a multiple of vec, at most 32 (one bit per slot)");
  static_assert(V * ESIZE <= 16, "loads are at most 16 bytes");
  static constexpr int NCH = EPL / V;
  static constexpr int RPW = 32 / LANES;
  static constexpr int BYTES = V * ESIZE;
  using RawT = Raw<BYTES>;

  ROUTER_FN static int expert_of(int slot, int sub) { return (slot / V) * (LANES * V) + sub * V + slot % V; }

  ROUTER_FN static void load_row(const Args& a, long long row, int sub, RawT (&raw)[NCH]) {
    const auto* base = static_cast<const unsigned char*>(a.logits) + row * a.E * ESIZE;
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const int e = expert_of(j * V, sub);
      if (e < a.E) load_raw<BYTES>(raw[j], base + static_cast<long long>(e) * ESIZE);
      else raw[j] = RawT{};
    }
  }

  // The logits as floats; padding slots get NaN.
  ROUTER_FN static void widen(const Args& a, int sub, const RawT (&raw)[NCH], float (&s)[EPL], int bf16) {
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const bool valid = expert_of(j * V, sub) < a.E;
#pragma unroll
      for (int v = 0; v < V; ++v) s[j * V + v] = valid ? raw_elem<ESIZE, BYTES>(raw[j], v, bf16) : quiet_nan();
    }
  }
};

}  // namespace moe::router::kern
