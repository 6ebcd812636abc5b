// The FFI module of an engine's worker (python -m moebench.peers.worker): the tuner's own worker
// loop (tuner/run/worker.hpp), in the Python process, over the engine's family. Requests, inputs,
// the fp64 reference, validation and the timers are moebench's C++; only the engine backend's
// `run` calls back into Python, with DLPack views of moebench's tensors.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <string>
#include <vector>

#include "moe/error.hpp"
#include "peers/engine.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/run/worker.hpp"

namespace moe::ffi_peers {

namespace {

// Borrows moebench's memory: the worker's tensors outlive every call that sees them.
struct ViewAlloc {
  void AllocData(DLTensor* t, void* data) { t->data = data; }
  void FreeData(DLTensor*) {}
};

DLDataType dl_dtype(DType d) {
  switch (d) {
    case DType::f32: return {kDLFloat, 32, 1};
    case DType::f16: return {kDLFloat, 16, 1};
    case DType::bf16: return {kDLBfloat, 16, 1};
    case DType::i32: return {kDLInt, 32, 1};
    case DType::e4m3: return {kDLFloat8_e4m3fn, 8, 1};
    case DType::u8: return {kDLUInt, 8, 1};
    default: break;
  }
  throw Error(std::string("the engine's worker cannot pass a ") + std::string(dtype_name(d)) + " tensor to Python");
}

tvm::ffi::Tensor as_tensor(const TensorRef& r, bool device, int ordinal) {
  std::vector<int64_t> shape(r.shape.begin(), r.shape.end());
  const DLDevice dev{device ? kDLCUDA : kDLCPU, device ? ordinal : 0};
  return tvm::ffi::Tensor::FromNDAlloc(ViewAlloc{}, tvm::ffi::ShapeView(shape.data(), shape.size()), dl_dtype(r.dtype), dev,
                                       r.data);
}

// runner(engine, problem_json, config_json, names, tensors, stream, device, ordinal): the
// tensors are the family's inputs, then its outputs, each under its name.
int64_t serve(const tvm::ffi::String& engine, const tvm::ffi::Function& runner, const tvm::ffi::String& host_timer) {
  const peers::Engine e = peers::parse_engine(std::string(engine));
  peers::set_engine_runner([runner](const peers::EngineCall& c) {
    tvm::ffi::Array<tvm::ffi::String> names;
    tvm::ffi::Array<tvm::ffi::Tensor> tensors;
    for (const RefMap* m : {c.in, c.out})
      for (const auto& [name, ref] : *m) {
        names.push_back(name);
        tensors.push_back(as_tensor(ref, c.device, c.ordinal));
      }
    const std::string problem = tuner::params_to_json(*c.problem).dump();
    const std::string config = tuner::params_to_json(*c.config).dump();
    runner(std::string(peers::engine_name(c.engine)), problem, config, names, tensors,
           static_cast<int64_t>(reinterpret_cast<std::intptr_t>(c.stream)), c.device, static_cast<int64_t>(c.ordinal));
  });
  const tuner::FamilyResolver resolve = [e](const std::string& name) -> const FamilyDesc& {
    return peers::engine_family(e, name);
  };
  const int rc = tuner::worker_main(0, 3, resolve, std::string(host_timer));
  peers::set_engine_runner({});
  return rc;
}

}  // namespace

}  // namespace moe::ffi_peers

TVM_FFI_DLL_EXPORT_TYPED_FUNC(serve, moe::ffi_peers::serve);
