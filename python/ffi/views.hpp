#pragma once
// DLPack tensors as the library's TensorRefs, and the library's errors as Python exceptions.
// Every exported function runs its body through `guarded`, so a moe::Error (a problem, shape or
// dtype the caller got wrong) reaches Python as ValueError with the text the CLI prints.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <exception>
#include <string>
#include <utility>

#include "moe/error.hpp"
#include "moe/moe.hpp"

namespace moe::ffi {

// The bound problem a Python `moebench.Kernel` holds.
class KernelObj : public tvm::ffi::Object {
 public:
  KernelObj(Kernel k, Backend b, int device) : kernel(std::move(k)), backend(b), device(device) {}
  Kernel kernel;
  Backend backend;
  int device;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("moebench.Kernel", KernelObj, tvm::ffi::Object);
};

// The KernelObj behind a handle, or a TypeError when the caller passed something else.
const KernelObj& kernel_of(const tvm::ffi::ObjectRef& handle);

// The library's dtype of a DLPack one; an Error naming the tensor when moebench takes no such.
DType dtype_of(const KernelObj& k, DLDataType t, const std::string& name);

// A view of `t` for kernel `k`: dtype from DLPack (f32, f16, bf16, i32, float8_e4m3fn; anything
// else, uint16 included, is refused), compact row-major, on the kernel's device.
TensorRef view(const KernelObj& k, const tvm::ffi::TensorView& t, const char* name);

// A view of `t` in host memory for an entry point that binds no Kernel (`entry` names it in
// errors): the dtypes `view` takes, compact row-major, on the CPU.
TensorRef host_view(const tvm::ffi::TensorView& t, const char* entry, const char* name);

// The caller's workspace (any dtype: bytes), on the kernel's device; none when absent.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};
Workspace workspace_of(const KernelObj& k, const tvm::ffi::Optional<tvm::ffi::TensorView>& w);

// The token (or row) count: a view's first dimension.
std::int64_t rows_of(const TensorRef& t, const char* name);

// `tokens` when it is a token count the family takes (the range `--tokens` takes on the command
// line), else an Error saying so: a count of 0, a negative one or 2^62 must not size anything.
std::int64_t checked_tokens(const KernelObj& k, std::int64_t tokens);

// The outputs a call at `tokens` writes, given `rows` rows of dispatched activations (gmm, combine):
// the family's own specs, except dispatch's rows, sized for the most any routing produces.
std::vector<TensorSpec> output_specs(const KernelObj& k, std::int64_t tokens, std::int64_t rows);

// Checks the views against the family's tensor specs for `tokens` (dtype, rank, fixed dims),
// with the words the CLI uses for its --input files, and refuses a tensor the problem does not
// take (a bias given to a problem with bias=0 would be ignored silently). `rows`: as above.
void check_views(const KernelObj& k, std::int64_t tokens, std::int64_t rows, const RefMap& in, const RefMap& out);

// The caller's stream for the kernel's device (null on the cpu backend).
void* caller_stream(const KernelObj& k);

template <class F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const tvm::ffi::Error&) {
    throw;
  } catch (const Error& e) {
    throw tvm::ffi::Error("ValueError", e.what(), "");
  } catch (const std::exception& e) {
    throw tvm::ffi::Error("RuntimeError", e.what(), "");
  }
}

}  // namespace moe::ffi
