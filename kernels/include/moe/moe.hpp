#pragma once
// The kernel library's public API for engines. A Kernel is one family's problem (everything
// but the token count) bound to a backend and device; its config per token count comes from
// the tuned tables, chosen as `moebench lookup` shows, or is given explicitly.
//
//   moe::Kernel router("router", moe::Params{{"experts", 256}, ...});   // tables: MOEBENCH_CONFIG_DIR
//   moe::router(router, logits, &bias, weights, ids, stream);           // config for logits' T
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

struct KernelOptions {
  Backend backend = Backend::cuda;
  int device = 0;
  // Where the tables are: empty means $MOEBENCH_CONFIG_DIR (':'-separated), else the
  // installed configs/ (or the source tree's, for a build tree).
  std::vector<std::string> table_dirs;
  std::optional<Params> config;  // explicit config for every token count instead of "auto"
  bool quiet = false;            // no warning on stderr when a table is missing
  // Launch with programmatic dependent launch (cuda backend): each kernel may start while the
  // one before it on the stream finishes, waiting in-kernel for that one's output. The layer's
  // config (pdl=0) can turn it off too.
  bool programmatic_launch = true;
};

class Kernel {
 public:
  // `problem` may omit parameters (family defaults) and must not depend on the token count.
  Kernel(const std::string& family, const Params& problem, KernelOptions options = {});
  ~Kernel();
  Kernel(Kernel&&) noexcept;
  Kernel& operator=(Kernel&&) noexcept;

  const FamilyDesc& family() const;
  const Params& problem() const;  // complete, with tokens=1 as a placeholder
  // The config for `tokens`: a search over the configs resolved at construction (one per
  // table entry, or per default-grid point when falling back); allocates nothing.
  const Params& config(std::int64_t tokens) const;
  // One line: which table and entry, or the default and why.
  std::string describe(std::int64_t tokens) const;
  std::size_t workspace_bytes(std::int64_t tokens) const;
  // Runs with the config for `tokens` on `stream` (cudaStream_t; ignored on the cpu backend).
  // Tensors are views of device memory (host memory on the cpu backend). On the cuda backend
  // the device given in KernelOptions must be current (an Error otherwise), and views must be
  // aligned as the kernels access them: gmm activations and weights on 16 bytes, its outputs
  // and int32/fp32 tensors on 4. The workspace must start on 128 bytes (the wgmma gmm keeps
  // CUtensorMap copies in it; cudaMalloc's 256-byte alignment is enough). A misaligned view is
  // an Error before anything is launched, never a fault that ends the CUDA context. Nothing
  // works in place: an output that shares a byte with an input, another output or the workspace
  // is an Error too.
  void run(std::int64_t tokens, const RefMap& in, const RefMap& out, void* stream = nullptr,
           void* workspace = nullptr, std::size_t workspace_bytes = 0) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One entry point per family: T is read from the first input's shape.
void router(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef weights, TensorRef ids,
            void* stream = nullptr);
void dispatch(const Kernel& k, TensorRef x, TensorRef ids, TensorRef offsets, TensorRef src, TensorRef dst,
              TensorRef x_sorted, void* stream = nullptr, void* workspace = nullptr, std::size_t workspace_bytes = 0);
void gmm_up(const Kernel& k, std::int64_t tokens, TensorRef x_sorted, TensorRef offsets, TensorRef w13, TensorRef h,
            void* stream = nullptr, void* workspace = nullptr, std::size_t workspace_bytes = 0);
void gmm_down(const Kernel& k, std::int64_t tokens, TensorRef h, TensorRef offsets, TensorRef w2,
              const TensorRef* row_weight, TensorRef y_sorted, void* stream = nullptr, void* workspace = nullptr,
              std::size_t workspace_bytes = 0);
void combine(const Kernel& k, TensorRef y_sorted, TensorRef dst, TensorRef weights, TensorRef out,
             void* stream = nullptr);
// The whole layer; `workspace` must hold k.workspace_bytes(T) bytes (intermediates included).
void moe_layer(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13, TensorRef w2,
               TensorRef out, void* stream, void* workspace, std::size_t workspace_bytes);
// The layer with dtype=fp8 (DESIGN.md 1.6): bf16 logits and x, e4m3 weights (uint8 codes) with
// one f32 scale per 128x128 block, bf16 out. The other families' fp8 tensors (x_scale, h_scale,
// ...) go through Kernel::run by name, as do the expert biases of a problem with bias13 or bias2
// (gpt-oss; docs/design.md, gmm).
void moe_layer_fp8(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13,
                   TensorRef w13_scale, TensorRef w2, TensorRef w2_scale, TensorRef out, void* stream, void* workspace,
                   std::size_t workspace_bytes);
// The layer with 4-bit weights (dtype=mxfp4 | int4, docs/w4.md), as checkpoints store them:
// mxfp4 w13/w2 uint8 e2m1 pairs [E, N, K/2] with uint8 e8m0 scales [E, N, K/32]; int4 int32 words
// of eight codes [E, N, K/8] with bf16 scales [E, N, K/group] and, with zero_point=1, int32 zero
// points [E, N/8, K/group] (null otherwise). bf16 logits, x and out.
void moe_layer_w4(const Kernel& k, TensorRef logits, const TensorRef* bias, TensorRef x, TensorRef w13,
                  TensorRef w13_scale, const TensorRef* w13_zero, TensorRef w2, TensorRef w2_scale,
                  const TensorRef* w2_zero, TensorRef out, void* stream, void* workspace, std::size_t workspace_bytes);

}  // namespace moe
