#pragma once
// Whether a problem fits in memory, decided before anything is allocated: a refusal with the
// numbers and what to do, never an out-of-memory crash half-way through a sweep.
#include <string>
#include <utility>
#include <vector>

namespace moe {

// What this process may still allocate on the host: the least of MemAvailable, the cgroup's
// memory.max minus its usage (v2; v1's limit_in_bytes), RLIMIT_AS minus the address space in
// use and RLIMIT_DATA minus the data segment. MOEBENCH_HOST_MEM_BYTES overrides them all
// (tests, and hosts whose limits are invisible). bytes 0: nothing could be read.
struct MemoryLimit {
  double bytes = 0;
  std::string source;  // which limit it is, for the user: "cgroup memory.max", "ulimit -v", ...
};
MemoryLimit host_memory_limit();

std::string gb(double bytes);  // "12.3 GB"

// Named parts of a requirement, in bytes.
using MemoryParts = std::vector<std::pair<std::string, double>>;

// Throws an Error when `parts` do not fit in `usable` bytes: "<what> needs X of <where> memory
// (a X, b Y), Z available (<source>): <advice>".
void require_memory(const std::string& what, const MemoryParts& parts, double usable, const MemoryLimit& avail,
                    const std::string& where, const std::string& advice);

// The usual advice for an MoE problem that is too big.
inline constexpr const char* kShardAdvice =
    "shard with --ep N (fewer local experts) or --tp N (smaller intermediate), or use fewer tokens";

}  // namespace moe
