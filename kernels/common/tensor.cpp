#include "moe/tensor.hpp"

#include <cmath>
#include <cstring>
#include <new>

#include "common/e4m3.hpp"
#include "moe/error.hpp"
#include "moe/memory.hpp"

namespace moe {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (auto d : shape_)
    if (d < 0) throw Error("tensor shape " + shape_str(shape_) + " has a negative dimension");
  const std::size_t bytes = static_cast<std::size_t>(moe::numel(shape_)) * dtype_size(dtype_);
  try {
    bytes_.assign(bytes, std::byte{0});
  } catch (const std::bad_alloc&) {
    // Footprints are checked before a problem allocates; this is what an estimate missed.
    throw Error("cannot allocate " + gb(static_cast<double>(bytes)) + " for a " + std::string(dtype_name(dtype_)) + " " +
                shape_str(shape_) + " tensor: the problem does not fit in this machine's memory; " + kShardAdvice);
  }
}

Tensor Tensor::borrow(const Tensor& t) {
  Tensor v;
  v.dtype_ = t.dtype_;
  v.shape_ = t.shape_;
  v.view_ = t.base();
  return v;
}

double Tensor::get(std::int64_t i) const {
  switch (dtype_) {
    case DType::f32: return data<float>()[i];
    case DType::f64: return data<double>()[i];
    case DType::bf16: return bf16_to_float(data<std::uint16_t>()[i]);
    case DType::f16: return f16_to_float(data<std::uint16_t>()[i]);
    case DType::i32: return data<std::int32_t>()[i];
    case DType::i64: return static_cast<double>(data<std::int64_t>()[i]);
    case DType::e4m3: return fp8::to_float(data<std::uint8_t>()[i]);
    case DType::u8: return data<std::uint8_t>()[i];
  }
  return 0;
}

void Tensor::set(std::int64_t i, double v) {
  switch (dtype_) {
    case DType::f32: data<float>()[i] = static_cast<float>(v); break;
    case DType::f64: data<double>()[i] = v; break;
    case DType::bf16: data<std::uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::f16: data<std::uint16_t>()[i] = float_to_f16(static_cast<float>(v)); break;
    case DType::i32: data<std::int32_t>()[i] = static_cast<std::int32_t>(v); break;
    case DType::i64: data<std::int64_t>()[i] = static_cast<std::int64_t>(v); break;
    case DType::e4m3: data<std::uint8_t>()[i] = fp8::from_float(static_cast<float>(v)); break;
    case DType::u8: data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v); break;
  }
}

RefMap refs(TensorMap& m) {
  RefMap r;
  for (auto& [k, t] : m) r[k] = t.ref();
  return r;
}

const TensorRef& need(const RefMap& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) throw Error("tensor '" + name + "' was not passed to the kernel");
  return it->second;
}

namespace {
constexpr std::uint32_t kPoisonF32 = 0x7FBADBADu;  // a NaN no arithmetic produces
constexpr std::uint16_t kPoison16 = 0x7FBDu;       // NaN in bf16; NaN in f16 too (exp all ones)
constexpr std::uint32_t kPoisonI32 = 0x5EADBEEFu;  // positive, larger than any valid index
constexpr std::uint8_t kPoisonE4m3 = 0xFF;          // -NaN: a NaN input encodes as +NaN (0x7F)
}  // namespace

void poison_host(TensorRef t) {
  const std::int64_t n = t.numel();
  switch (dtype_size(t.dtype)) {
    case 1:
      for (std::int64_t i = 0; i < n; ++i) t.as<std::uint8_t>()[i] = kPoisonE4m3;
      break;
    case 2:
      for (std::int64_t i = 0; i < n; ++i) t.as<std::uint16_t>()[i] = kPoison16;
      break;
    case 4: {
      const std::uint32_t p = t.dtype == DType::f32 ? kPoisonF32 : kPoisonI32;
      for (std::int64_t i = 0; i < n; ++i) t.as<std::uint32_t>()[i] = p;
      break;
    }
    case 8: {
      const std::uint64_t p = t.dtype == DType::f64 ? 0x7FF7BADBADBADBADull : 0x5EADBEEF5EADBEEFull;
      for (std::int64_t i = 0; i < n; ++i) t.as<std::uint64_t>()[i] = p;
      break;
    }
  }
}

bool is_poison(DType t, const void* e) {
  switch (t) {
    case DType::e4m3:
    case DType::u8: return *static_cast<const std::uint8_t*>(e) == kPoisonE4m3;
    case DType::bf16:
    case DType::f16: {
      std::uint16_t v;
      std::memcpy(&v, e, 2);
      return v == kPoison16;
    }
    case DType::f32:
    case DType::i32: {
      std::uint32_t v;
      std::memcpy(&v, e, 4);
      return v == (t == DType::f32 ? kPoisonF32 : kPoisonI32);
    }
    case DType::f64:
    case DType::i64: {
      std::uint64_t v;
      std::memcpy(&v, e, 8);
      return v == (t == DType::f64 ? 0x7FF7BADBADBADBADull : 0x5EADBEEF5EADBEEFull);
    }
  }
  return false;
}

}  // namespace moe
