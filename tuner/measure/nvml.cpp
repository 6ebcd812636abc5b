#include "tuner/measure/nvml.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace moe::tuner {

namespace {

// The few NVML declarations used, as nvml.h has them (that header is not always installed).
using nvmlReturn = int;
using nvmlDevice = struct nvmlDevice_st*;
constexpr nvmlReturn kSuccess = 0;
constexpr int kClockSm = 1;        // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct Api {
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*by_pci)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*default_clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*max_clock)(nvmlDevice, int, unsigned*) = nullptr;
  nvmlReturn (*power)(nvmlDevice, unsigned*) = nullptr;
  nvmlReturn (*temperature)(nvmlDevice, int, unsigned*) = nullptr;
};

template <class F>
bool sym(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

std::string load(Api& a) {
  void* lib = nullptr;
  std::string tried;
  for (const char* const* p = nvml_library_candidates(); *p; ++p) {
    if (!**p) continue;
    if ((lib = dlopen(*p, RTLD_NOW | RTLD_LOCAL))) break;
    tried += std::string(tried.empty() ? "" : ", ") + *p;
  }
  if (!lib) return "NVML not found (tried " + tried + "): no clock, power or temperature readings";
  if (!sym(lib, "nvmlInit_v2", a.init) || !sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", a.by_pci) ||
      !sym(lib, "nvmlDeviceGetClockInfo", a.clock))
    return "libnvidia-ml lacks nvmlInit_v2/nvmlDeviceGetClockInfo: no clock readings";
  sym(lib, "nvmlDeviceGetDefaultApplicationsClock", a.default_clock);
  sym(lib, "nvmlDeviceGetMaxClockInfo", a.max_clock);
  sym(lib, "nvmlDeviceGetPowerUsage", a.power);
  sym(lib, "nvmlDeviceGetTemperature", a.temperature);
  if (const nvmlReturn r = a.init(); r != kSuccess) return "nvmlInit failed (NVML error " + std::to_string(r) + ")";
  return "";
}

const Api* api(std::string* why) {
  static Api a;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [] { reason = load(a); });
  *why = reason;
  return reason.empty() ? &a : nullptr;
}

}  // namespace

const char* const* nvml_library_candidates() {
  static const char* env = std::getenv("MOEBENCH_NVML");
  static const char* list[] = {env ? env : "", "libnvidia-ml.so.1", "libnvidia-ml.so", nullptr};
  // An explicit path is the only one tried, so a test (or a user) can rule NVML out.
  static const char* only[] = {env ? env : "", nullptr};
  return env && *env ? only : list;
}

GpuState read_gpu_state(const std::string& pci_bus_id) {
  GpuState s;
  const Api* a = api(&s.why_not);
  if (!a) return s;
  nvmlDevice dev = nullptr;
  if (const nvmlReturn r = a->by_pci(pci_bus_id.c_str(), &dev); r != kSuccess) {
    s.why_not = "NVML does not know device " + pci_bus_id + " (NVML error " + std::to_string(r) + ")";
    return s;
  }
  if (a->clock(dev, kClockSm, &s.sm_mhz) != kSuccess) {
    s.why_not = "NVML cannot read the SM clock";
    return s;
  }
  if (!a->default_clock || a->default_clock(dev, kClockSm, &s.default_sm_mhz) != kSuccess || s.default_sm_mhz == 0)
    if (a->max_clock) a->max_clock(dev, kClockSm, &s.default_sm_mhz);
  unsigned mw = 0;
  if (a->power && a->power(dev, &mw) == kSuccess) s.power_w = mw / 1000.0;
  if (a->temperature) a->temperature(dev, kTemperatureGpu, &s.temp_c);
  s.ok = true;
  return s;
}

nlohmann::json to_json(const GpuState& s) {
  if (!s.ok) return {{"ok", false}, {"why_not", s.why_not}};
  return {{"ok", true}, {"sm_mhz", s.sm_mhz}, {"default_sm_mhz", s.default_sm_mhz}, {"power_w", s.power_w},
          {"temp_c", s.temp_c}};
}

std::string throttle_note(const GpuState& before, const GpuState& after) {
  std::string r;
  for (const GpuState* s : {&before, &after}) {
    if (!s->ok || s->default_sm_mhz == 0) continue;
    if (s->sm_mhz < kThrottleFraction * s->default_sm_mhz) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "SM clock %u MHz %s the samples, below 75%% of its default %u MHz: throttled",
                    s->sm_mhz, s == &before ? "before" : "after", s->default_sm_mhz);
      r += (r.empty() ? "" : "; ") + std::string(buf);
    }
  }
  return r;
}

}  // namespace moe::tuner
