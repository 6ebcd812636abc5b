#pragma once
// What the fp8 decode kernel needs beyond cuda_primitives.cuh: 32-bit shared loads of four
// codes, the e4m3x2 -> f16x2 conversion (cvt.rn.f16x2.e4m3x2, sm_89+) and 16-bit code stores;
// under the emulator (GMM_EMULATED_PRIMITIVES) the same on host memory, converting through
// e4m3.hpp's decoding (every e4m3 value is exact in f16).
#include <cstdint>

#include "common/e4m3.hpp"

#ifdef GMM_EMULATED_PRIMITIVES
#include <cstring>

namespace moe::gmm::emulated {

inline std::uint32_t lds_u32(const unsigned char* p) {
  simt::ptx::need_aligned(p, 4, "32-bit shared load");
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint32_t e4m3x2_to_f16x2(std::uint32_t v) {
  return simt::ptx::pack2<false>(fp8::to_float(static_cast<std::uint8_t>(v)), fp8::to_float(static_cast<std::uint8_t>(v >> 8)));
}
inline void store_u16(std::uint8_t* p, std::uint16_t v) {
  simt::ptx::need_aligned(p, 2, "16-bit store");
  std::memcpy(p, &v, 2);
}

}  // namespace moe::gmm::emulated

#else

namespace moe::gmm::cuda {

GMM_DEVICE std::uint32_t lds_u32(const unsigned char* p) { return *reinterpret_cast<const std::uint32_t*>(p); }
// Low byte to the low half, as the mma fragments pair them.
GMM_DEVICE std::uint32_t e4m3x2_to_f16x2(std::uint32_t v) {
  std::uint32_t r;
  const unsigned short pair = static_cast<unsigned short>(v);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(pair));
#else
  // Older devices have no e4m3 conversion; invalid_reason refuses fp8 mma there, so a build for
  // them (sm_80: the mma kernels are sm_80+) compiles this kernel but never launches it.
  (void)pair;
  r = 0;
  __trap();
#endif
  return r;
}
GMM_DEVICE void store_u16(std::uint8_t* p, std::uint16_t v) { *reinterpret_cast<std::uint16_t*>(p) = v; }

}  // namespace moe::gmm::cuda

#endif
