#pragma once
// The cuda router: configs, their validity for a problem, and the reusable launcher.
// Everything here but router_cuda is plain host code (the space and the tests use it).
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "moe/family.hpp"
#include "moe/params.hpp"
#include "router/cuda_row_args.hpp"
#include "router/spec.hpp"

namespace moe::router {

// A compiled kernel (lanes, epl, vec_bytes: see cuda_shapes.hpp) and its launch shape.
struct CudaConfig {
  int lanes = 32;      // lanes per row: 32/lanes rows per warp
  int epl = 8;         // experts per lane held in registers
  int vec_bytes = 16;  // bytes per logits load
  int warps = 4;       // warps per CTA

  static CudaConfig from(const Params& config);
  Params params() const;
};

std::vector<ParamSpec> cuda_config_params();
// Why `cfg` cannot route `spec`; empty when it can.
std::string cuda_invalid_reason(const RouterSpec& spec, const CudaConfig& cfg);
// Position of cfg's kernel in kShapes for spec's dtype, or -1.
int cuda_shape_index(const RouterSpec& spec, const CudaConfig& cfg);
// Every valid config (full), or the curated ones: the widest loads of the shapes that do not
// leave most lanes idle, at 4 and 8 warps per CTA.
std::vector<CudaConfig> cuda_space(const RouterSpec& spec, bool full);
// A config that is never bad for the problem; Error when no compiled kernel can route it.
CudaConfig cuda_default(const RouterSpec& spec);
// Kernel arguments, including the group strategy the config's layout allows.
kern::Args make_kernel_args(const RouterSpec& spec, const CudaConfig& cfg, const void* logits, const float* bias,
                            float* weights, std::int32_t* ids);

// The cuda BackendImpl of the router family (space, default, validity, run).
BackendImpl cuda_backend();

// Routes spec.tokens rows of device logits [T,E] (bias [E] f32, or null when spec.bias is
// off) into device weights/ids [T,K], asynchronously on `stream`. Throws an Error for an
// invalid config or misaligned pointers, and on a failed launch.
void router_cuda(const RouterSpec& spec, const CudaConfig& cfg, const void* logits, const float* bias,
                 float* weights, std::int32_t* ids, cudaStream_t stream);

}  // namespace moe::router
