#include "tuner/measure/timer_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tuner/measure/memory_check.hpp"

namespace moe::tuner {

using clock_type = std::chrono::steady_clock;

int cpu_batch_size(double call_us, double target_us, int max_batch) {
  if (!(call_us > 0)) return max_batch;
  const double n = std::ceil(target_us / call_us);
  return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(max_batch)));
}

CpuTimer::CpuTimer(const Prepared& p, const Params& config, int threads)
    : p_(p), impl_(p.family->need_backend(Backend::cpu)), config_(config) {
  outputs_ = allocate(p.output_specs);
  in_ = refs(const_cast<TensorMap&>(p.inputs));  // backends read inputs only
  out_ = refs(outputs_);
  const std::size_t bytes = impl_.workspace_bytes ? impl_.workspace_bytes(p.problem, config) : 0;
  check_host_workspace(*p.family, p.problem, static_cast<double>(bytes));
  ws_.resize(bytes);
  ctx_.threads = threads;
  ctx_.workspace = ws_.data();
  ctx_.workspace_bytes = ws_.size();
  // Warm-up (first touch of outputs and workspace); when it is already long, it is estimate
  // enough, and a slow candidate is not run twice for nothing.
  auto t0 = clock_type::now();
  call();
  double us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
  if (us < 1000) {
    t0 = clock_type::now();
    call();
    us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
  }
  batch_ = cpu_batch_size(us);
}

void CpuTimer::call() { impl_.run(p_.problem, config_, in_, out_, ctx_); }

double CpuTimer::sample_us() {
  const auto t0 = clock_type::now();
  for (int i = 0; i < batch_; ++i) call();
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / batch_;
}

double host_copy_bandwidth_gbps(std::size_t bytes, int reps) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::memcpy(b.data(), a.data(), bytes);
  double best = INFINITY;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    std::memcpy(r % 2 ? a.data() : b.data(), r % 2 ? b.data() : a.data(), bytes);
    best = std::min(best, std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  return best > 0 ? 2.0 * static_cast<double>(bytes) / best / 1e9 : 0;
}

}  // namespace moe::tuner
