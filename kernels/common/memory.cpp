#include "moe/memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "moe/error.hpp"

namespace moe {

namespace {

// A number from a one-line file (cgroup files); -1 when absent or "max".
double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return -1;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() ? v : -1;
}

// A "Key:   123 kB" field of a /proc file, in bytes; -1 when absent.
double proc_kb(const char* file, const char* key) {
  std::ifstream in(file);
  const std::string k = std::string(key) + ":";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(k, 0) == 0) {
      std::istringstream is(line.substr(k.size()));
      double kb = 0;
      is >> kb;
      return kb * 1024.0;
    }
  return -1;
}

// The process's cgroup v2 folder, from /proc/self/cgroup ("0::/path").
std::string cgroup_v2_dir() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "/sys/fs/cgroup";
}

void consider(MemoryLimit& m, double bytes, const std::string& source) {
  if (bytes < 0) return;
  if (m.bytes <= 0 || bytes < m.bytes) m = MemoryLimit{bytes, source};
}

double rlimit_room(int resource, const char* used_key) {
  rlimit r{};
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return -1;
  const double used = proc_kb("/proc/self/status", used_key);
  return static_cast<double>(r.rlim_cur) - (used > 0 ? used : 0);
}

}  // namespace

MemoryLimit host_memory_limit() {
  if (const char* o = std::getenv("MOEBENCH_HOST_MEM_BYTES")) {
    char* end = nullptr;
    const double v = std::strtod(o, &end);
    if (end != o && v > 0) return {v, "MOEBENCH_HOST_MEM_BYTES"};
  }
  MemoryLimit m;
  consider(m, proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable");
  // cgroup v2 limits the whole subtree at every level: the nearest one set is enough here.
  for (std::string dir = cgroup_v2_dir(); dir.size() >= std::string("/sys/fs/cgroup").size();) {
    const double max = read_number(dir + "/memory.max"), cur = read_number(dir + "/memory.current");
    if (max > 0) {
      consider(m, max - (cur > 0 ? cur : 0), "cgroup memory.max of " + dir);
      break;
    }
    const std::size_t slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/sys/fs/cgroup") break;
    dir.resize(slash);
  }
  const double v1 = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (v1 > 0 && v1 < 1e18)
    consider(m, v1 - std::max(0.0, read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes")), "cgroup v1 memory limit");
  consider(m, rlimit_room(RLIMIT_AS, "VmSize"), "ulimit -v (RLIMIT_AS)");
  consider(m, rlimit_room(RLIMIT_DATA, "VmData"), "ulimit -d (RLIMIT_DATA)");
  return m;
}

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

void require_memory(const std::string& what, const MemoryParts& parts, double usable, const MemoryLimit& avail,
                    const std::string& where, const std::string& advice) {
  double need = 0;
  for (auto& [n, b] : parts) need += b;
  if (avail.bytes <= 0 || need <= usable) return;
  std::string list;
  for (auto& [n, b] : parts)
    if (b >= 1e8) list += (list.empty() ? "" : ", ") + gb(b) + " of " + n;
  // The headroom is part of the answer: "needs 0.1 GB, 0.7 GB available" alone reads as a bug.
  throw Error(what + " needs " + gb(need) + " of " + where + " memory" + (list.empty() ? "" : " (" + list + ")") +
              ", more than the " + gb(std::max(0.0, usable)) + " it may use: of the " + gb(avail.bytes) +
              " available (" + avail.source + "), " + gb(avail.bytes - std::max(0.0, usable)) +
              " is kept back for the process itself and the rest of the machine: " + advice);
}

}  // namespace moe
