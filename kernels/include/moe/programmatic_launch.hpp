#pragma once
// Programmatic dependent launch (PDL): while it is on for the calling thread, every launch made
// through moe/cuda_launch_api.hpp carries cudaLaunchAttributeProgrammaticStreamSerialization, so
// a kernel may start while its predecessor on the stream finishes (each of the library's kernels
// waits with griddepcontrol.wait before it reads that predecessor's output: docs/design.md,
// "Programmatic dependent launch"). Launches a library makes itself (CUTLASS's adapter) never
// carry it, so they end before their successor starts.
namespace moe {

// On by default. CudaRuntimeCalls::launch reads it for the launch it makes.
bool programmatic_launch();

// Sets it for the calling thread until the scope ends.
class ProgrammaticLaunch {
 public:
  explicit ProgrammaticLaunch(bool on);
  ~ProgrammaticLaunch();
  ProgrammaticLaunch(const ProgrammaticLaunch&) = delete;
  ProgrammaticLaunch& operator=(const ProgrammaticLaunch&) = delete;

 private:
  bool before_;
};

}  // namespace moe
