#include <fmt/format.h>

#include "app/commands.hpp"
#include "moe/cuda_device.hpp"

namespace moe::app {

void add_devices_command(CLI::App& root) {
  auto* cmd = root.add_subcommand("devices", "list the GPUs (name, SMs, memory, clocks) and the CPU");
  cmd->callback([] {
    const int n = cuda_device_count();
    const std::string release = nvidia_driver_release();
    fmt::print("NVIDIA driver {} (CUDA {}); this binary needs {}; {} device(s) visible\n",
               release.empty() ? "not installed" : release, cuda_driver_version(), cuda_driver_needed(), n);
    if (n == 0) fmt::print("  ({})\n", cuda_unavailable_reason());
    for (int i = 0; i < n; ++i) {
      const DeviceInfo d = cuda_device_info(i);
      const CudaClocks c = cuda_clocks(i);
      fmt::print("  cuda:{}  {}  sm_{}{}  {} SMs  {:.1f} GiB  L2 {:.0f} MiB  smem/block {} KiB  SM clock {} MHz  memory clock {} MHz ({}-bit)\n",
                 i, d.name, d.cc_major, d.cc_minor, d.sm_count, d.mem_bytes / 1073741824.0, d.l2_bytes / 1048576.0,
                 d.smem_optin / 1024, c.sm_khz / 1000, c.mem_khz / 1000, c.mem_bus_bits);
    }
    const DeviceInfo cpu = cpu_device_info();
    fmt::print("  cpu     {}  {} threads\n", cpu.name.substr(5), cpu.threads);
  });
}

}  // namespace moe::app
