#pragma once
// The `emu` backend of a family, built over its cuda backend: the same config parameters, the
// same space and default as on an H100 (no device is present, so it is described), and a run
// that executes the cuda kernel sources under the SIMT emulator on host tensors. Each family
// supplies only that run (kernels/<family>/emu.cpp); the rest is the cuda backend's own.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/family.hpp"

namespace moe {

// A kernel misbehaved under the emulator (a deadlock, a divergent collective, shared memory out
// of range): the config's output is not to be trusted, so it fails validation with this.
class EmuFault : public std::runtime_error {
 public:
  explicit EmuFault(const std::string& what) : std::runtime_error(what) {}
};

// The device the emu backend's spaces and defaults are taken for: an H100 as described.
DeviceInfo emu_device_info();

// Runs `body` once per thread of `grid` blocks of `threads` under the emulator (blocks one after
// another); a kernel's fault or deadlock comes out as EmuFault naming `kernel`.
void emu_launch(const std::string& kernel, long long grid, int threads, std::size_t dynamic_smem,
                const std::function<void()>& body, std::uint32_t seed = 7);

// The kernels emulated on this thread while it lives, by name, in launch order: what one call of a
// config launches, as its cuda plan launches them (each family's emu run mirrors its plan).
// Work the emulator cannot run and a host loop plays (CUTLASS's GEMM) is noted by its caller
// with emu_note_launch, so that it counts too. Nested logs: the innermost one records.
class EmuLaunchLog {
 public:
  EmuLaunchLog();
  ~EmuLaunchLog();
  EmuLaunchLog(const EmuLaunchLog&) = delete;
  EmuLaunchLog& operator=(const EmuLaunchLog&) = delete;
  const std::vector<std::string>& kernels() const { return kernels_; }

 private:
  friend void emu_note_launch(const std::string& kernel);
  std::vector<std::string> kernels_;
  EmuLaunchLog* outer_;
};
void emu_note_launch(const std::string& kernel);

// How fast a family's kernels emulate (bytes and FLOPs of FamilyDesc::estimate per second).
struct EmuSpeed {
  double bytes_per_s = 0, flops_per_s = 0;
};

// Expected seconds of one emulated call of one config, from the family's estimate and its emu
// backend's speeds (0 when the family has no emu backend or states no speed).
double emu_seconds(const FamilyDesc& f, const Params& problem);

// The emu BackendImpl over `cuda`: its run replaced by `run`, `not_emulated` as given.
BackendImpl emu_backend_over(const BackendImpl& cuda, EmuSpeed speed, decltype(BackendImpl::run) run,
                             decltype(BackendImpl::not_emulated) not_emulated = {});

}  // namespace moe
