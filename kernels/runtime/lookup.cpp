#include "runtime/lookup.hpp"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>

#include "moe/error.hpp"
#include "runtime/build_id.hpp"

namespace moe::runtime {

std::string_view match_name(Match m) {
  switch (m) {
    case Match::exact: return "exact";
    case Match::nearest: return "nearest";
    default: return "default";
  }
}

std::size_t nearest_index(const std::vector<std::int64_t>& sorted, std::int64_t tokens, std::size_t* reads) {
  const auto read = [&](std::size_t i) {
    if (reads) ++*reads;
    return sorted[i];
  };
  // The first key >= tokens, by halving [lo, hi).
  std::size_t lo = 0, hi = sorted.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (read(mid) < tokens) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return 0;
  if (lo == sorted.size()) return lo - 1;
  const std::int64_t above = read(lo), below = read(lo - 1);
  if (above == tokens) return lo;
  // log2(t/below) vs log2(above/t) compares t*t with below*above, exactly in integers.
  const __int128 t2 = static_cast<__int128>(tokens) * tokens, ba = static_cast<__int128>(below) * above;
  return t2 <= ba ? lo - 1 : lo;
}

std::int64_t nearest_key(const std::vector<std::int64_t>& sorted, std::int64_t tokens) {
  return sorted.empty() ? -1 : sorted[nearest_index(sorted, tokens)];
}

std::string sweep_command(const FamilyDesc& f, Backend b, const Params& problem, const std::string& dir) {
  std::string cmd = "moebench sweep " + f.name;
  // A parameter at its default goes without saying: the command stays short enough to read.
  for (auto& [k, v] : problem.values()) {
    const ParamSpec* spec = f.problem_param(k);
    if (k != "tokens" && !(spec && spec->default_value == v)) cmd += " --" + k + " " + value_str(v);
  }
  cmd += " --backend " + std::string(backend_name(b)) + " --tables " + dir;
  return cmd;
}

void warn_once(const std::string& key, const std::string& msg) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (said.insert(key).second) std::fprintf(stderr, "moebench: warning: %s\n", msg.c_str());
}

// A table entry is only used when it is still a valid config for this build and problem.
static std::string entry_problem(const FamilyDesc& f, const BackendImpl& impl, const Params& problem,
                                 const Params& config, const DeviceInfo& dev, Params& completed) {
  try {
    Params full = config;
    const Params def = impl.default_config(problem, dev);
    for (auto& [k, v] : def.values())
      if (!full.has(k)) full.set(k, v);
    full = complete(impl.config_params, full, f.name + " config");
    if (impl.invalid_reason) {
      std::string why = impl.invalid_reason(problem, full, dev);
      if (!why.empty()) return why;
    }
    completed = full;
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

Choice choose_config(const FamilyDesc& f, Backend b, const Params& problem, const DeviceInfo& dev,
                     const std::vector<std::string>& dirs, bool quiet) {
  const BackendImpl& impl = f.need_backend(b);
  const std::int64_t tokens = problem.i("tokens");
  const std::string device = device_slug(dev), key = problem_key(problem);
  const std::string first_dir = dirs.empty() ? std::string(".") : dirs.front();
  Choice c;
  c.table = table_path(first_dir, device, f.name, key);
  std::string problem_note;
  for (auto& dir : dirs) {
    const std::string path = table_path(dir, device, f.name, key);
    std::shared_ptr<const ConfigTable> table;
    try {
      table = cached_table(path);
    } catch (const Error& e) {
      problem_note = e.what();  // a broken table must not take the program down: fall back, loudly
      c.table = path;
      break;
    }
    if (!table) continue;
    c.table = path;
    // A table copied or renamed into another's place would hand this problem another's configs;
    // a table of another build is as good as missing. Either way a later folder may hold a good one.
    if (table->kernel != f.name || (!table->problem_key.empty() && table->problem_key != key) ||
        (!table->device.empty() && table->device != device)) {
      if (problem_note.empty())
        problem_note = "table " + path + " holds " + table->kernel + " on " + table->device + " (" +
                       table->problem_key + "), not what its path names: " + f.name + " on " + device + " (" + key + ")";
      continue;
    }
    if (const std::string stale = stale_table_reason(f.name, table->build_id); !stale.empty()) {
      if (problem_note.empty()) problem_note = "table " + path + " no longer applies: " + stale;
      continue;
    }
    const std::int64_t k = nearest_key(table->keys, tokens);
    if (k < 0) {
      problem_note = "table " + path + " has no entries";
      break;
    }
    const TableEntry& e = table->entries.at(k);
    Params full;
    const std::string why = entry_problem(f, impl, problem, e.config, dev, full);
    if (!why.empty()) {
      problem_note = "table " + path + " entry " + std::to_string(k) + " (" + e.config.str() +
                     ") is not valid in this build: " + why;
      break;
    }
    c.config = full;
    c.key = k;
    c.entry = e;
    if (k == tokens) {
      c.how = Match::exact;
      c.reason = "exact entry for " + std::to_string(tokens) + " tokens";
    } else {
      c.how = Match::nearest;
      c.reason = "no entry for " + std::to_string(tokens) + " tokens; nearest in log2 distance is " + std::to_string(k) +
                 " (ties go to the smaller key)";
    }
    if (e.kept_default) c.reason += "; the tuned winner was within noise of the default, so the default was kept";
    return c;
  }
  c.how = Match::fallback;
  c.config = impl.default_config(problem, dev);
  c.config = complete(impl.config_params, c.config, f.name + " default config");
  const std::string cmd = sweep_command(f, b, problem, first_dir);
  if (problem_note.empty()) {
    c.reason = "no table " + c.table;
    c.missing = true;
    c.warning = "no config table for " + f.name + ": " + c.table + " does not exist; using the default config " +
                c.config.str() + ". Tune it with: " + cmd;
  } else {
    c.reason = problem_note;
    c.warning = problem_note + "; using the default config " + c.config.str() + ". Re-tune it with: " + cmd;
  }
  if (!quiet) warn_once(c.table, c.warning);
  return c;
}

}  // namespace moe::runtime
