#pragma once
// A kernel family described once, as data: its problem and config parameters, its tensors,
// how to make inputs, its reference, validation and cost, and one entry per backend.
// Every command (list, run, sweep, lookup) works from this description alone.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moe/params.hpp"
#include "moe/tensor.hpp"

namespace moe {

// emu: the cuda backend's kernel sources run on the CPU by the SIMT emulator (emu/), validated
// only: no timing.
enum class Backend { cpu, cuda, emu };
std::string_view backend_name(Backend b);
Backend parse_backend(std::string_view s);

// What a backend's space and default may depend on.
struct DeviceInfo {
  Backend backend = Backend::cpu;
  std::string name;           // "NVIDIA H200", "cpu: <model>"
  int ordinal = 0;
  int sm_count = 0;           // cuda
  int cc_major = 0, cc_minor = 0;
  std::size_t smem_optin = 0;  // max dynamic shared memory per block
  std::size_t l2_bytes = 0;
  std::size_t mem_bytes = 0;
  int threads = 1;  // cpu: worker threads
};

// A config's launches worked out once for a problem and its inputs' shapes (grid, shared
// memory opt-in, occupancy), so that a timed call only launches. Backends derive their own.
struct LaunchPlan {
  virtual ~LaunchPlan() = default;
  int kernels = 0;  // kernels one call launches
};

struct LaunchContext {
  void* stream = nullptr;  // cudaStream_t on the cuda backend
  int threads = 1;         // cpu backend
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // From this backend's `plan` for the same problem, config and input shapes; null: run plans.
  const LaunchPlan* plan = nullptr;
};

// A shape dimension of -1 is set by the data (rows after dispatch depend on the routing).
struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::string help;
};

struct InputOptions {
  std::string dist = "uniform";  // uniform | zipf | replay
  double zipf_s = 1.2;
  std::uint64_t seed = 0;
  // Captured routing to replay (logits [N,E] or ids [N,k]); rows are reused cyclically.
  const Tensor* replay = nullptr;
};

struct Check {
  std::string tensor;
  bool ok = true;
  double max_abs = 0, max_rel = 0, rel_l2 = 0, tolerance = 0;
  std::int64_t mismatches = 0, nans = 0, unwritten = 0;
  std::string detail;  // first offending element, for the user
};

struct Validation {
  bool ok = true;
  std::vector<Check> checks;
  std::string summary() const;
};

struct Cost {
  double bytes = 0;  // fewest bytes the call must move through memory
  double flops = 0;
};

// Bytes a problem takes, known before any of it is made (upper bounds where rows depend on the
// routing): its inputs by name, so a caller can leave out those it was given, and its outputs.
// On the host the outputs are held twice (the reference and a backend's), on a device once.
struct Footprint {
  std::vector<std::pair<std::string, double>> inputs;
  double outputs = 0;
  // Tensors a backend keeps between its kernels, in its workspace on whatever runs it (the
  // layer's intermediates): counted on the device, and on the host where a host backend runs.
  double between = 0;
};

struct BackendImpl {
  Backend backend = Backend::cpu;
  std::vector<ParamSpec> config_params;
  // Every valid config for the problem on this device; `full` widens the curated default space.
  std::function<std::vector<Params>(const Params& problem, const DeviceInfo&, bool full)> space;
  // A config that is never bad for the problem; must be valid.
  std::function<Params(const Params& problem, const DeviceInfo&)> default_config;
  // Explains why a config is invalid for a problem (empty when valid).
  std::function<std::string(const Params& problem, const Params& config, const DeviceInfo&)> invalid_reason;
  std::function<std::size_t(const Params& problem, const Params& config)> workspace_bytes;
  std::function<void(const Params& problem, const Params& config, const RefMap& in,
                     const RefMap& out, const LaunchContext&)>
      run;
  // Optional: plans a config's launches for these inputs (every runtime query happens here);
  // a bench plans once per config and passes the plan to every timed run.
  std::function<std::shared_ptr<const LaunchPlan>(const Params& problem, const Params& config, const RefMap& in)>
      plan;
  // Optional, for configs that leave choices to runtime dispatch (the layer's "auto" stages):
  // the same config with those choices named, looked up in `table_dirs` (in order). moe::Kernel
  // pins once per token key, so its calls read no table and honour its own table folders.
  std::function<Params(const Params& problem, const Params& config, const DeviceInfo&,
                       const std::vector<std::string>& table_dirs, bool quiet)>
      pin_config;
  // emu only: why this config's main kernel cannot run under the emulator (empty: it runs). Such
  // a config still runs the kernels it can and is validated, with a stand-in for the rest.
  std::function<std::string(const Params& problem, const Params& config)> not_emulated;
  // emu only: how fast the emulator gets through a problem's estimated cost (FamilyDesc::estimate)
  // on one core, so that shapes that would take minutes are refused before they start.
  double emu_bytes_per_s = 0, emu_flops_per_s = 0;
  // emu only, where those speeds do not apply: seconds a call takes (the layer: its stages').
  std::function<double(const Params& problem)> emu_seconds;
  // The library or engine whose kernel a config runs ("cuBLAS", "vLLM Triton"); empty (or unset)
  // where the kernel is moebench's own. Summaries and results put the best of ours beside the
  // best peer measured at the same point.
  std::function<std::string(const Params& config)> peer;
};

// `impl.peer(config)` where the backend has peers, else empty: moebench's own kernel.
std::string peer_of(const BackendImpl& impl, const Params& config);

struct FamilyDesc {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> problem_params;  // always includes "tokens" and "dtype"
  std::function<void(const Params&)> check_problem;  // throws Error saying what is wrong
  std::function<std::vector<TensorSpec>(const Params&)> input_specs;
  // Fills every input not already present (the user may have given some as .npy),
  // deriving from the given ones where they constrain the rest.
  std::function<void(const Params&, const InputOptions&, TensorMap&)> make_inputs;
  std::function<std::vector<TensorSpec>(const Params&, const TensorMap& inputs)> output_specs;
  std::function<void(const Params&, const TensorMap& in, TensorMap& out)> reference;
  std::function<Validation(const Params&, const TensorMap& in, const TensorMap& got,
                           const TensorMap& ref)>
      validate;
  std::function<Cost(const Params&, const TensorMap& in)> cost;
  std::function<Footprint(const Params&)> footprint;
  // The cost of a call before any input exists, routing taken as uniform: a sweep splits its
  // points into shards of equal expected time with it. Must be cheap (no tensors).
  std::function<Cost(const Params&)> estimate;
  std::vector<BackendImpl> backends;

  const BackendImpl* backend(Backend b) const;
  const BackendImpl& need_backend(Backend b) const;  // Error when the family lacks it
  const ParamSpec* problem_param(const std::string& n) const;
};

// The config `given` names, completed: its keys over the backend's default for the problem, or,
// where that mix is invalid (gmm's kernel=wgmma over the default's mma tile), the first config
// of the problem's space (curated first) that agrees with every key given. Error naming `what`
// and the reason when none is valid.
Params fill_config(const BackendImpl& impl, const Params& problem, const Params& given, const DeviceInfo& dev,
                   const std::string& what);

// Every family, in pipeline order. Adding a family means adding it here (kernels/), not in app/.
const std::vector<const FamilyDesc*>& families();
const FamilyDesc& family(const std::string& name);  // Error listing the known names

// Helpers every family uses; defined in kernels/common.
// Checks inputs against specs (dtype, rank, fixed dims) and allocates outputs.
void check_tensors(const std::string& family, const std::vector<TensorSpec>& specs,
                   const TensorMap& m, const std::string& what);
TensorMap allocate(const std::vector<TensorSpec>& specs);

}  // namespace moe
