#pragma once
// The host-side arithmetic of the cuda timer, kept apart so it is tested without a GPU.
#include <cstddef>
#include <string_view>

namespace moe::tuner {

// cold: L2 flushed before every sample (what a kernel sees inside a real layer, whose
// neighbours evict its data); hot: a CUDA graph of back-to-back calls (best case, launch
// overhead amortised).
enum class TimerMode { cold, hot };
TimerMode parse_timer_mode(std::string_view s);  // Error for anything but cold|hot
std::string_view timer_mode_name(TimerMode m);

// Bytes written before each cold sample: twice the L2 so no line of the previous call
// survives (64 MiB when the size is unknown, at most 1 GiB).
std::size_t l2_flush_bytes(std::size_t l2_bytes);

// Calls captured into one hot-mode graph: enough that a launch lasts about `target_us`,
// between 1 and `max_batch`.
int graph_batch_size(double call_us, double target_us = 500.0, int max_batch = 200);

// Bytes for the copy-bandwidth probe: large enough to stream from HBM (256 MiB), small
// enough to fit (an eighth of the memory).
std::size_t copy_probe_bytes(std::size_t mem_bytes);

}  // namespace moe::tuner
