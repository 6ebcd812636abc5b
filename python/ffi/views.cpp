#include "views.hpp"

#include <tvm/ffi/extra/c_env_api.h>

#include <algorithm>
#include <string>

#include "common/view_checks.hpp"
#include "dispatch/spec.hpp"

namespace moe::ffi {

namespace {

std::string dlpack_name(DLDataType t) {
  std::string code;
  switch (t.code) {
    case kDLInt: code = "int"; break;
    case kDLUInt: code = "uint"; break;
    case kDLFloat: code = "float"; break;
    case kDLBfloat: code = "bfloat"; break;
    case kDLBool: return "bool";
    case kDLFloat8_e4m3fn: return "float8_e4m3fn";
    default: code = "dlpack code " + std::to_string(t.code) + " of ";
  }
  std::string s = code + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

// A uint16 array is raw bits of anything: taking it as bf16 would hide a caller's mistake.
bool from_dlpack(DLDataType t, DType& out) {
  if (t.lanes != 1) return false;
  if (t.code == kDLFloat && t.bits == 32) return out = DType::f32, true;
  if (t.code == kDLFloat && t.bits == 16) return out = DType::f16, true;
  if (t.code == kDLBfloat && t.bits == 16) return out = DType::bf16, true;
  if (t.code == kDLInt && t.bits == 32) return out = DType::i32, true;
  if (t.code == kDLFloat8_e4m3fn && t.bits == 8) return out = DType::e4m3, true;
  if (t.code == kDLUInt && t.bits == 8) return out = DType::u8, true;  // packed 4-bit weights, e8m0 scales
  return false;
}

std::string device_name(DLDevice d) {
  if (d.device_type == kDLCPU) return "cpu";
  if (d.device_type == kDLCUDA) return "cuda:" + std::to_string(d.device_id);
  return "device type " + std::to_string(d.device_type);
}

}  // namespace

const KernelObj& kernel_of(const tvm::ffi::ObjectRef& handle) {
  const KernelObj* k = handle.as<KernelObj>();
  if (!k) throw tvm::ffi::Error("TypeError", "expected a moebench.Kernel as the first argument", "");
  return *k;
}

namespace {

// The first byte of a compact tensor on the kernel's device.
void* placed(const KernelObj& k, const tvm::ffi::TensorView& t, const char* name) {
  const std::string fam = k.kernel.family().name;
  const DLDevice d = t.device();
  const bool cuda = k.backend == Backend::cuda;
  if (cuda ? (d.device_type != kDLCUDA || d.device_id != k.device) : d.device_type != kDLCPU)
    throw Error(fam + ": tensor '" + name + "' is on " + device_name(d) + " but the kernel runs on the " +
                std::string(backend_name(k.backend)) + " backend" + (cuda ? " of cuda:" + std::to_string(k.device) : "") +
                ": move the tensor there or bind the Kernel to its device");
  if (!t.IsContiguous())
    throw Error(fam + ": tensor '" + name + "' is not contiguous: pass a compact row-major tensor (.contiguous())");
  return static_cast<char*>(t.data_ptr()) + t.byte_offset();
}

}  // namespace

DType dtype_of(const KernelObj& k, DLDataType t, const std::string& name) {
  DType d;
  if (!from_dlpack(t, d))
    throw Error(k.kernel.family().name + ": tensor '" + name + "' has dtype " + dlpack_name(t) +
                ", which moebench does not take: use float32, float16, bfloat16, int32 (or float8_e4m3fn for fp8, uint8 for "
                "4-bit weights)");
  return d;
}

TensorRef view(const KernelObj& k, const tvm::ffi::TensorView& t, const char* name) {
  TensorRef r;
  r.dtype = dtype_of(k, t.dtype(), name);
  r.data = placed(k, t, name);
  for (std::int64_t s : t.shape()) r.shape.push_back(s);
  return r;
}

TensorRef host_view(const tvm::ffi::TensorView& t, const char* entry, const char* name) {
  TensorRef r;
  if (!from_dlpack(t.dtype(), r.dtype))
    throw Error(std::string(entry) + ": tensor '" + name + "' has dtype " + dlpack_name(t.dtype()) +
                ", which moebench does not take: use float32, float16, bfloat16, int32 or float8_e4m3fn");
  if (t.device().device_type != kDLCPU)
    throw Error(std::string(entry) + ": tensor '" + name + "' is on " + device_name(t.device()) +
                ": weights are prepared in host memory, once at load time; move them to the CPU (.cpu()) first");
  if (!t.IsContiguous())
    throw Error(std::string(entry) + ": tensor '" + name + "' is not contiguous: pass a compact row-major tensor (.contiguous())");
  r.data = static_cast<char*>(t.data_ptr()) + t.byte_offset();
  for (std::int64_t s : t.shape()) r.shape.push_back(s);
  return r;
}

Workspace workspace_of(const KernelObj& k, const tvm::ffi::Optional<tvm::ffi::TensorView>& w) {
  if (!w.has_value()) return {};
  const tvm::ffi::TensorView v = *w;
  const DLDataType t = v.dtype();
  return {placed(k, v, "workspace"), static_cast<std::size_t>(v.numel()) * ((t.bits * t.lanes + 7) / 8)};
}

std::int64_t rows_of(const TensorRef& t, const char* name) {
  if (t.shape.empty()) throw Error(std::string("tensor '") + name + "' must have a token (row) dimension, got a scalar");
  return t.shape[0];
}

std::int64_t checked_tokens(const KernelObj& k, std::int64_t tokens) {
  const FamilyDesc& f = k.kernel.family();
  const ParamSpec* spec = f.problem_param("tokens");
  if (spec && (tokens < spec->min || tokens > spec->max))
    throw Error(f.name + ": tokens = " + std::to_string(tokens) + " is out of range [" + std::to_string(spec->min) +
                ", " + std::to_string(spec->max) + "], the token counts --tokens takes");
  return tokens;
}

std::vector<TensorSpec> output_specs(const KernelObj& k, std::int64_t tokens, std::int64_t rows) {
  checked_tokens(k, tokens);
  const FamilyDesc& f = k.kernel.family();
  Params p = k.kernel.problem();
  p.set("tokens", tokens);
  if (f.name == "dispatch") {
    const DispatchSpec s = DispatchSpec::parse(p);
    const std::int64_t R = s.max_rows();
    return {{"offsets", DType::i32, {s.local() + 1}, ""},
            {"src", DType::i32, {R}, ""},
            {"dst", DType::i32, {s.slots()}, ""},
            {"x_sorted", s.out_dtype(), {R, s.D}, ""}};
  }
  // The families read only their inputs' row counts here.
  TensorMap placeholders;
  for (auto& spec : f.input_specs(p)) placeholders.emplace(spec.name, Tensor(spec.dtype, Shape{rows, 0}));
  return f.output_specs(p, placeholders);
}

void check_views(const KernelObj& k, std::int64_t tokens, std::int64_t rows, const RefMap& in, const RefMap& out) {
  const FamilyDesc& f = k.kernel.family();
  Params p = k.kernel.problem();
  p.set("tokens", checked_tokens(k, tokens));
  const std::vector<TensorSpec> in_specs = f.input_specs(p);
  for (auto& [name, t] : in)
    if (std::none_of(in_specs.begin(), in_specs.end(), [&](const TensorSpec& s) { return s.name == name; }))
      throw Error(f.name + ": input '" + name + "' is given but the problem " + k.kernel.problem().str() +
                  " takes none: pass None, or bind a Kernel whose problem takes it");
  check_views(f.name, in_specs, in, "input");
  check_views(f.name, output_specs(k, tokens, rows), out, "output");
}

void* caller_stream(const KernelObj& k) {
  return k.backend == Backend::cuda ? TVMFFIEnvGetStream(kDLCUDA, k.device) : nullptr;
}

}  // namespace moe::ffi
