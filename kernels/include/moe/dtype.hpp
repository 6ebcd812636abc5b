#pragma once
// Element types of every tensor moebench reads, writes or computes with.
// bf16 and f16 are stored as their raw 16-bit patterns (uint16_t) on the host, e4m3 (OCP FP8
// E4M3FN, the fp8 recipe's codes) as raw bytes (uint8_t). u8 is a plain byte: the 4-bit formats'
// packed e2m1 pairs, e8m0 exponents and zero points (docs/w4.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe {

enum class DType { f32, f16, bf16, i32, i64, f64, e4m3, u8 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "f16", "bf16", "i32", "i64", "f64", "e4m3", "u8"
DType parse_dtype(std::string_view s);  // accepts the names above and fp32/float32/bfloat16/...
bool is_float(DType t);

// Round-to-nearest-even conversions; NaN stays NaN, overflow saturates to inf as IEEE does.
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float v);
float f16_to_float(std::uint16_t bits);
std::uint16_t float_to_f16(float v);

// Rounds v to what a tensor of type t can hold (identity for f32/f64).
float round_to(DType t, float v);

}  // namespace moe
