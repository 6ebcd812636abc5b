#include "moe/dtype.hpp"

#include <cmath>
#include <cstring>

#include "common/e4m3.hpp"
#include "moe/error.hpp"

namespace moe {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::e4m3:
    case DType::u8: return 1;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::i64:
    case DType::f64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f64: return "f64";
    case DType::e4m3: return "e4m3";
    case DType::u8: return "u8";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "f32" || s == "fp32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "i32" || s == "int32") return DType::i32;
  if (s == "i64" || s == "int64") return DType::i64;
  if (s == "f64" || s == "fp64" || s == "float64" || s == "double") return DType::f64;
  if (s == "e4m3" || s == "float8_e4m3fn") return DType::e4m3;
  if (s == "u8" || s == "uint8") return DType::u8;
  throw Error("unknown dtype '" + std::string(s) + "': use one of f32, f16, bf16, i32, i64, f64, e4m3, u8");
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64 || t == DType::e4m3;
}

// The bit views e4m3.hpp already defines for host and device.
static std::uint32_t bits_of(float v) { return fp8::f32_bits(v); }
static float float_of(std::uint32_t u) { return fp8::f32_from(u); }

float bf16_to_float(std::uint16_t bits) { return float_of(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16(float v) {
  std::uint32_t u = bits_of(v);
  if (std::isnan(v)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // keep it quiet NaN
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(man), -24);  // subnormal or zero
    return sign ? -mag : mag;
  }
  if (exp == 31) return float_of(sign | 0x7F800000u | (man << 13));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

std::uint16_t float_to_f16(float v) {
  const std::uint32_t u = bits_of(v);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000);
  if (std::isnan(v)) return sign | 0x7E00;
  const float a = std::fabs(v);
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to inf
  if (a < 0x1.0p-14f) {
    // Subnormal: the value in units of 2^-24, rounded to nearest even.
    const float q = a * 0x1.0p24f;
    float r = std::nearbyint(q);  // default rounding mode is nearest-even
    return sign | static_cast<std::uint16_t>(r);
  }
  std::uint32_t au = bits_of(a);
  std::uint32_t exp = (au >> 23) - 112, man = au & 0x7FFFFF;
  std::uint32_t h = (exp << 10) | (man >> 13);
  const std::uint32_t rest = man & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return sign | static_cast<std::uint16_t>(h);
}

float round_to(DType t, float v) {
  switch (t) {
    case DType::bf16: return bf16_to_float(float_to_bf16(v));
    case DType::f16: return f16_to_float(float_to_f16(v));
    case DType::e4m3: return fp8::to_float(fp8::from_float(v));
    default: return v;
  }
}

}  // namespace moe
