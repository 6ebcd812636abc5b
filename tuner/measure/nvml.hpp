#pragma once
// The GPU's clocks, power and temperature from NVML, loaded at run time with dlopen: no link
// dependency, and a machine without libnvidia-ml only loses these readings (a note, not an
// error). A sweep reads them before and after each candidate's samples and flags samples
// taken while the SM clock sat below 75% of its default (nvbench's throttle rule).
#include <string>

#include <nlohmann/json.hpp>

namespace moe::tuner {

struct GpuState {
  bool ok = false;
  unsigned sm_mhz = 0, default_sm_mhz = 0;
  double power_w = 0;
  unsigned temp_c = 0;
  std::string why_not;  // when !ok
};

// Reads the device with this PCI bus id ("0000:1B:00.0", as cudaDeviceGetPCIBusId writes it).
GpuState read_gpu_state(const std::string& pci_bus_id);

nlohmann::json to_json(const GpuState& s);

// nvbench's rule: a sample is throttled when the SM clock is below 75% of the default.
inline constexpr double kThrottleFraction = 0.75;
// "" when neither reading is throttled, else what happened, for the candidate's note.
std::string throttle_note(const GpuState& before, const GpuState& after);

// Where libnvidia-ml is looked for ($MOEBENCH_NVML first when set).
const char* const* nvml_library_candidates();

}  // namespace moe::tuner
