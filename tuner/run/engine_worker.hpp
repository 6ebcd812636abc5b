#pragma once
// The worker of an engine backend: `python -m moebench.peers.worker --engine NAME`, which loads
// moebench's FFI module and serves the same protocol as `moebench worker` (worker.hpp), with the
// engine's kernel as the family's backend. The parent finds the interpreter, checks that the
// engine's kernel can be loaded before it plans anything, and starts one such worker per device.
#include <string>

#include "peers/engine.hpp"
#include "tuner/run/worker_process.hpp"

namespace moe::tuner {

// The timer an engine's samples name under Triton's interpreter: host time of Python emulating
// the kernel, which says nothing of the kernel's speed on a GPU (the emu backend's kind of run).
inline constexpr const char* kInterpreterTimer = "triton-interpreter";

// $MOEBENCH_PYTHON, else python3 on PATH, as an absolute path; Error saying how to choose one.
std::string engine_python();

// The launch of the engine's worker; `interpret`: Triton's interpreter on host tensors.
WorkerLaunch engine_launch(peers::Engine e, bool interpret);

// Runs the worker's `--check`: returns what it loads ("vllm 0.33.0 fused_moe_kernel from ..."),
// or throws an Error with its one line (the engine or its kernel not importable, torch or triton
// missing), so the sweep ends before planning with exit status 2.
std::string check_engine(peers::Engine e, bool interpret);

}  // namespace moe::tuner
