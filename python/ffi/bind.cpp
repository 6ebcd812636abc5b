// A Kernel's entry point as one function of tensors alone, for callers that cannot pass the
// handle (XLA's FFI calls a registered target with arrays and attributes only).
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>

#include <vector>

#include "views.hpp"

namespace moe::ffi {

namespace {

// bound(a, b, ...) calls entry(handle, a, b, ...), with None inserted at the positions in
// `none_at` (counted among the entry's own arguments after the handle): where the problem
// takes no optional tensor.
tvm::ffi::Function kernel_bind(const tvm::ffi::ObjectRef& handle, const tvm::ffi::Function& entry,
                               const tvm::ffi::Array<int64_t>& none_at) {
  kernel_of(handle);
  std::vector<int64_t> holes(none_at.begin(), none_at.end());
  return tvm::ffi::Function::FromPacked([handle, entry, holes](tvm::ffi::PackedArgs args, tvm::ffi::Any* rv) {
    std::vector<tvm::ffi::AnyView> all{handle};
    std::size_t next_hole = 0;
    for (int i = 0; i <= args.size(); ++i) {
      while (next_hole < holes.size() && holes[next_hole] == static_cast<int64_t>(all.size()) - 1) {
        all.emplace_back(nullptr);
        ++next_hole;
      }
      if (i < args.size()) all.push_back(args[i]);
    }
    entry.CallPacked(all.data(), static_cast<int32_t>(all.size()), rv);
  });
}

}  // namespace

}  // namespace moe::ffi

TVM_FFI_DLL_EXPORT_TYPED_FUNC(kernel_bind, moe::ffi::kernel_bind);
