#include "tuner/measure/cupti_timer.hpp"

#include <cupti_activity.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace moe::tuner {

namespace {

struct Api {
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t*) = nullptr;  // optional
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char**) = nullptr;
  CUptiResult (*timestamp)(uint64_t*) = nullptr;  // optional
};

Api api;

// The newest kernel record of the toolkit built with (CUDA 12.4 has no Kernel10).
#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif
std::mutex mu;
double sum_us = 0;
int sum_kernels = 0;
// Records of kernels that started before begin() (a late warm-up record) are not the sample's.
uint64_t begin_ts = 0;

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
constexpr std::size_t kAlign = 8;

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  double us = 0;
  int n = 0;
  uint64_t since = 0;
  {
    std::lock_guard lock(mu);
    since = begin_ts;
  }
  while (buffer && api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      // start/end sit at the same offsets in every kernel record version since CUDA 9.
      const auto* k = reinterpret_cast<const KernelRecord*>(rec);
      if (k->end > k->start && k->start >= since) {
        us += static_cast<double>(k->end - k->start) * 1e-3;
        ++n;
      }
    }
  }
  std::free(buffer);
  std::lock_guard lock(mu);
  sum_us += us;
  sum_kernels += n;
}

template <class F>
bool load_sym(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

std::string init() {
  void* lib = nullptr;
  std::string tried;
  for (const char* const* p = cupti_library_candidates(); *p; ++p) {
    if (!**p) continue;
    lib = dlopen(*p, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    tried += std::string(tried.empty() ? "" : ", ") + *p;
  }
  if (!lib) return "libcupti not found (tried " + tried + "; set MOEBENCH_CUPTI to its path)";
  if (!load_sym(lib, "cuptiActivityEnable", api.enable) ||
      !load_sym(lib, "cuptiActivityRegisterCallbacks", api.register_callbacks) ||
      !load_sym(lib, "cuptiActivityFlushAll", api.flush_all) ||
      !load_sym(lib, "cuptiActivityGetNextRecord", api.next_record) ||
      !load_sym(lib, "cuptiGetResultString", api.result_string) ||
      !load_sym(lib, "cuptiActivityDisable", api.disable))
    return "libcupti lacks the activity API";
  load_sym(lib, "cuptiActivityGetNumDroppedRecords", api.dropped);
  load_sym(lib, "cuptiGetTimestamp", api.timestamp);
  auto failed = [](const char* what, CUptiResult r) {
    const char* s = "unknown";
    if (api.result_string) api.result_string(r, &s);
    return std::string(what) + " failed: " + s;
  };
  if (CUptiResult r = api.register_callbacks(on_request, on_complete); r != CUPTI_SUCCESS)
    return failed("cuptiActivityRegisterCallbacks", r);
  // Enabling is the test of whether it works; it stays on for the first holder (no disable
  // here: the disable call is the one that can deadlock).
  if (CUptiResult r = api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
    return failed("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
  return "";
}

}  // namespace

CuptiVerdict judge_cupti(int seen, int launched, std::size_t dropped) {
  const char* tail = ": timed with CUDA events, launch overhead included";
  if (dropped > 0)
    return {false, "CUPTI dropped " + std::to_string(dropped) + " activity records" + tail};
  if (seen == 0) return {false, std::string("CUPTI saw no kernel for this config") + tail};
  if (seen < launched)
    return {false, "CUPTI reported " + std::to_string(seen) + " of the " + std::to_string(launched) +
                       " kernels a call launches" + tail};
  if (launched > 0 && seen > launched)
    return {false, "CUPTI reported " + std::to_string(seen) + " kernels for a call that launches " +
                       std::to_string(launched) + tail};
  return {};
}

const char* const* cupti_library_candidates() {
  static const char* env = std::getenv("MOEBENCH_CUPTI");
  static const char* list[] = {env ? env : "",
                               "libcupti.so",
                               "libcupti.so.13",
                               "libcupti.so.12",
                               "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                               "/usr/local/cuda/lib64/libcupti.so",
                               nullptr};
  return list;
}

void SharedSwitch::acquire() {
  std::lock_guard lock(mu_);
  if (users_++ == 0 && on_) on_();
}

void SharedSwitch::release() {
  std::lock_guard lock(mu_);
  if (users_ == 0) return;
  if (--users_ == 0 && off_) off_();
}

int SharedSwitch::users() const {
  std::lock_guard lock(mu_);
  return users_;
}

namespace {
bool enabled_by_init = true;  // init() left collection on: the first acquire need not enable
}  // namespace

CuptiKernelTimer::CuptiKernelTimer()
    : switch_(
          [] {
            if (!enabled_by_init) api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
            enabled_by_init = false;
          },
          [] {
            api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // teardown: the device is idle
            api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
          }) {}

CuptiKernelTimer* CuptiKernelTimer::get(std::string* why_not) {
  static CuptiKernelTimer instance;
  static CuptiKernelTimer* timer = nullptr;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [] {
    reason = init();
    if (reason.empty()) timer = &instance;
  });
  if (why_not) *why_not = reason;
  return timer;
}

void CuptiKernelTimer::acquire() { switch_.acquire(); }
void CuptiKernelTimer::release() { switch_.release(); }

void CuptiKernelTimer::begin() {
  api.flush_all(0);
  uint64_t now = 0;
  if (api.timestamp) api.timestamp(&now);
  std::lock_guard lock(mu);
  sum_us = 0;
  sum_kernels = 0;
  begin_ts = now;
}

void CuptiKernelTimer::flush() { api.flush_all(0); }

double CuptiKernelTimer::collected_us(int* kernels) const {
  std::lock_guard lock(mu);
  if (kernels) *kernels = sum_kernels;
  return sum_us;
}

std::size_t CuptiKernelTimer::dropped() {
  std::size_t n = 0;
  if (api.dropped && api.dropped(nullptr, 0, &n) == CUPTI_SUCCESS) return n;
  return 0;
}

}  // namespace moe::tuner
