#include "common/emu_backend.hpp"

#include <string>
#include <vector>

#include "emu/simt_emulator.hpp"

namespace moe {

DeviceInfo emu_device_info() {
  DeviceInfo d;
  d.backend = Backend::emu;
  d.name = "NVIDIA H100 (described; kernels emulated on the cpu)";
  d.sm_count = 132;
  d.cc_major = 9;
  d.smem_optin = 227 * 1024;
  d.l2_bytes = 50 * 1024 * 1024;
  d.threads = 1;
  return d;
}

namespace {
thread_local EmuLaunchLog* current_log = nullptr;
}  // namespace

EmuLaunchLog::EmuLaunchLog() : outer_(current_log) { current_log = this; }
EmuLaunchLog::~EmuLaunchLog() { current_log = outer_; }

void emu_note_launch(const std::string& kernel) {
  if (current_log) current_log->kernels_.push_back(kernel);
}

void emu_launch(const std::string& kernel, long long grid, int threads, std::size_t dynamic_smem,
                const std::function<void()>& body, std::uint32_t seed) {
  emu_note_launch(kernel);
  try {
    simt::launch(grid, threads, dynamic_smem, body, seed);
  } catch (const std::exception& e) {
    throw EmuFault(kernel + ": " + e.what());
  }
}

namespace {

// The cuda backend's spaces and validity checks read the device's limits only for a cuda device.
DeviceInfo as_cuda() {
  DeviceInfo d = emu_device_info();
  d.backend = Backend::cuda;
  return d;
}

}  // namespace

double emu_seconds(const FamilyDesc& f, const Params& problem) {
  const BackendImpl* emu = f.backend(Backend::emu);
  if (!emu) return 0;
  if (emu->emu_seconds) return emu->emu_seconds(problem);
  if (!f.estimate) return 0;
  const Cost c = f.estimate(problem);
  double s = 0;
  if (emu->emu_bytes_per_s > 0) s += c.bytes / emu->emu_bytes_per_s;
  if (emu->emu_flops_per_s > 0) s += c.flops / emu->emu_flops_per_s;
  return s;
}

BackendImpl emu_backend_over(const BackendImpl& cuda, EmuSpeed speed, decltype(BackendImpl::run) run,
                             decltype(BackendImpl::not_emulated) not_emulated) {
  BackendImpl b;
  b.backend = Backend::emu;
  b.config_params = cuda.config_params;
  // The cuda backend's answers for an H100, whatever device the caller describes, less the
  // configs that run another library's kernels (BackendImpl::peer): the emulator runs
  // moebench's kernel sources only.
  b.space = [s = cuda.space, peer = cuda.peer](const Params& problem, const DeviceInfo&, bool full) {
    std::vector<Params> v = s(problem, as_cuda(), full);
    if (peer) std::erase_if(v, [&](const Params& c) { return !peer(c).empty(); });
    return v;
  };
  b.peer = cuda.peer;
  b.default_config = [d = cuda.default_config](const Params& problem, const DeviceInfo&) {
    return d(problem, as_cuda());
  };
  if (cuda.invalid_reason)
    b.invalid_reason = [r = cuda.invalid_reason, peer = cuda.peer](const Params& problem, const Params& config,
                                                                    const DeviceInfo&) {
      const std::string lib = peer ? peer(config) : std::string();
      if (!lib.empty())
        return "this config runs " + lib + "'s kernels, which the emulator cannot run (it runs moebench's own kernel "
               "sources): use --backend cuda on a GPU";
      return r(problem, config, as_cuda());
    };
  b.workspace_bytes = cuda.workspace_bytes;
  b.run = std::move(run);
  b.not_emulated = std::move(not_emulated);
  b.emu_bytes_per_s = speed.bytes_per_s;
  b.emu_flops_per_s = speed.flops_per_s;
  return b;
}

}  // namespace moe
