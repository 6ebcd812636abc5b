#pragma once
// The cpu backend's threading: static chunks of [0, n) over `threads` std::threads.
// Chunks are contiguous so each thread writes its own rows (no false sharing of results).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace moe {

template <class F>
void parallel_for(std::int64_t n, int threads, std::int64_t grain, F&& body) {
  if (n <= 0) return;
  const std::int64_t max_chunks = (n + std::max<std::int64_t>(grain, 1) - 1) / std::max<std::int64_t>(grain, 1);
  const int t = static_cast<int>(std::clamp<std::int64_t>(threads, 1, max_chunks));
  if (t == 1) {
    body(std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(t);
  const std::int64_t chunk = (n + t - 1) / t;
  for (int w = 0; w < t; ++w) {
    const std::int64_t b = w * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    auto run = [&, w, b, e] {
      try {
        body(b, e);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    };
    try {
      pool.emplace_back(run);
    } catch (const std::system_error&) {
      // The system has no thread to give (a process or memory limit): this thread does the chunk,
      // and the rest, rather than leaving a joinable std::thread to terminate the program.
      run();
    }
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace moe
