#pragma once
// Peer engines whose kernels the tuner can time beside moebench's own: vLLM's and SGLang's
// Triton fused_moe. An engine's kernel is Python (Triton), so it runs in a Python worker process
// (python/moebench/peers/worker.py) that serves the tuner's worker protocol; the tuner sees the
// engine as a family whose backends' space, default and validity are the engine's, declared
// here, and whose `run` calls the runner that worker registers (set_engine_runner).
//
// The derived family keeps moebench's problem, inputs, fp64 reference, validation and cost, so
// a candidate is checked exactly as moebench's own kernels are. Its cpu slot runs the engine on
// host tensors (Triton's interpreter: the times are the interpreter's, not a kernel's), its
// cuda slot on device tensors on the caller's stream.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/family.hpp"

namespace moe::peers {

enum class Engine { vllm, sglang };

// "vllm" / "sglang"; Error naming the engines for anything else.
Engine parse_engine(std::string_view s);
bool is_engine_name(std::string_view s);
std::string_view engine_name(Engine e);
// What summaries call the kernel: "vLLM Triton", "SGLang Triton".
std::string_view engine_label(Engine e);

// The families an engine backend can tune (gmm).
std::vector<std::string> engine_families();
// `family`'s description with the engine's backends in place of moebench's (cpu slot: host
// tensors, cuda slot: device tensors). Error saying what the engine tunes for other families.
const FamilyDesc& engine_family(Engine e, const std::string& family);

// What the worker's runner gets: the engine, the problem and config (complete), the family's
// inputs and outputs as views (host or device memory) and the stream (null on the host).
struct EngineCall {
  Engine engine;
  const Params* problem;
  const Params* config;
  const RefMap* in;
  const RefMap* out;
  void* stream = nullptr;
  bool device = false;
  int ordinal = 0;
};
using EngineRunner = std::function<void(const EngineCall&)>;
// Installed by the Python worker before it serves requests; without it an engine backend's run
// is an Error saying where engines run.
void set_engine_runner(EngineRunner runner);

}  // namespace moe::peers
