// moebench.Kernel: a family's problem bound once (moe::Kernel), and what it answers per token
// count. Problems and configs arrive as JSON objects of words, parsed by the families' own
// parameter specs, so `experts="256"` means what `--experts 256` means on the command line.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/function.h>

#include <nlohmann/json.hpp>

#include "runtime/build_id.hpp"
#include "runtime/params_json.hpp"
#include "views.hpp"

namespace moe::ffi {

namespace {

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw Error(what + " is not valid JSON");
  }
}

Params parse_words(const std::vector<ParamSpec>& specs, const std::string& text, const std::string& what) {
  const nlohmann::json j = parse_json(text, what);
  if (!j.is_object()) throw Error(what + " must be a dict of parameter names to values");
  Params p;
  for (auto& [name, v] : j.items()) {
    const std::string word = v.is_string() ? v.get<std::string>() : v.dump();
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == name; });
    // An unknown name is kept as given: completing the problem names it with the known ones.
    p.set(name, spec == specs.end() ? Value{word} : parse_value(*spec, word));
  }
  return p;
}

tvm::ffi::ObjectRef kernel_new(const tvm::ffi::String& family_name, const tvm::ffi::String& problem_json,
                               const tvm::ffi::String& backend, int64_t device,
                               const tvm::ffi::String& table_dirs_json, const tvm::ffi::String& config_json) {
  return guarded([&] {
    const FamilyDesc& f = family(family_name);
    KernelOptions o;
    o.backend = parse_backend(std::string(backend));
    o.device = static_cast<int>(device);
    for (auto& d : parse_json(table_dirs_json, "table_dirs")) o.table_dirs.push_back(d.get<std::string>());
    if (!config_json.empty())
      o.config = parse_words(f.need_backend(o.backend).config_params, config_json, f.name + " config");
    Params problem = parse_words(f.problem_params, problem_json, "problem of '" + f.name + "'");
    Kernel k(f.name, problem, o);
    return tvm::ffi::ObjectRef(tvm::ffi::make_object<KernelObj>(std::move(k), o.backend, o.device));
  });
}

tvm::ffi::String kernel_config(const tvm::ffi::ObjectRef& h, int64_t tokens) {
  return guarded([&] {
    const KernelObj& k = kernel_of(h);
    return tvm::ffi::String(runtime::params_to_json(k.kernel.config(checked_tokens(k, tokens))).dump());
  });
}

tvm::ffi::String kernel_describe(const tvm::ffi::ObjectRef& h, int64_t tokens) {
  return guarded([&] {
    const KernelObj& k = kernel_of(h);
    return tvm::ffi::String(k.kernel.describe(checked_tokens(k, tokens)));
  });
}

int64_t kernel_workspace_bytes(const tvm::ffi::ObjectRef& h, int64_t tokens) {
  return guarded([&] {
    const KernelObj& k = kernel_of(h);
    return static_cast<int64_t>(k.kernel.workspace_bytes(checked_tokens(k, tokens)));
  });
}

// [lo, hi] of the token counts the family takes: Python ints past int64 are refused with it
// before they reach a call.
tvm::ffi::Array<int64_t> kernel_tokens_range(const tvm::ffi::ObjectRef& h) {
  return guarded([&] {
    const ParamSpec* spec = kernel_of(h).kernel.family().problem_param("tokens");
    return tvm::ffi::Array<int64_t>{spec ? spec->min : INT64_MIN, spec ? spec->max : INT64_MAX};
  });
}

tvm::ffi::String kernel_family(const tvm::ffi::ObjectRef& h) {
  return guarded([&] { return tvm::ffi::String(kernel_of(h).kernel.family().name); });
}

tvm::ffi::String kernel_problem(const tvm::ffi::ObjectRef& h) {
  return guarded([&] { return tvm::ffi::String(runtime::params_to_json(kernel_of(h).kernel.problem()).dump()); });
}

// The id of this build of a family's kernels: a table records the id it was tuned with, and one
// of another build is passed over (runtime/build_id.hpp).
tvm::ffi::String build_id(const tvm::ffi::String& family_name) {
  return guarded([&] { return tvm::ffi::String(runtime::family_build_id(family(family_name).name)); });
}

// [{"name", "dtype", "shape"}] of what a call writes: how moebench.jax and moebench.torch's fake
// implementations size their results.
tvm::ffi::String kernel_outputs(const tvm::ffi::ObjectRef& h, int64_t tokens, int64_t rows) {
  return guarded([&] {
    nlohmann::json j = nlohmann::json::array();
    for (auto& s : output_specs(kernel_of(h), tokens, rows))
      j.push_back({{"name", s.name}, {"dtype", std::string(dtype_name(s.dtype))}, {"shape", s.shape}});
    return tvm::ffi::String(j.dump());
  });
}

// The checks a call makes, on shapes alone: inputs and outputs as {"name": [dtype, shape]} with
// DLPack dtype names ("float32", "bfloat16"), so a traced JAX call fails as an eager one would.
void kernel_check(const tvm::ffi::ObjectRef& h, int64_t tokens, int64_t rows, const tvm::ffi::String& in_json,
                  const tvm::ffi::String& out_json) {
  guarded([&] {
    const KernelObj& k = kernel_of(h);
    auto refs = [&](const tvm::ffi::String& text) {
      RefMap m;
      const nlohmann::json j = parse_json(text, "tensors");  // named: items() of a temporary dangles
      for (auto& [name, v] : j.items()) {
        TensorRef r;
        r.dtype = dtype_of(k, tvm::ffi::StringToDLDataType(v.at(0).get<std::string>()), name);
        r.shape = v.at(1).get<Shape>();
        m.emplace(name, r);
      }
      return m;
    };
    check_views(k, tokens, rows, refs(in_json), refs(out_json));
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_new, moe::ffi::kernel_new);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_config, moe::ffi::kernel_config);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_describe, moe::ffi::kernel_describe);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_workspace_bytes, moe::ffi::kernel_workspace_bytes);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_tokens_range, moe::ffi::kernel_tokens_range);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_family, moe::ffi::kernel_family);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_problem, moe::ffi::kernel_problem);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_outputs, moe::ffi::kernel_outputs);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_check, moe::ffi::kernel_check);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(build_id, moe::ffi::build_id);
