#include "runtime/table.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <nlohmann/json.hpp>

#include "io/json_text.hpp"
#include "io/read_file.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"
#include "runtime/params_json.hpp"

namespace fs = std::filesystem;

namespace moe::runtime {

std::string slugify(const std::string& name) {
  std::string r;
  bool dash = false;
  for (unsigned char c : name) {
    if (std::isalnum(c)) {
      if (dash && !r.empty()) r += '-';
      r += static_cast<char>(std::tolower(c));
      dash = false;
    } else {
      dash = true;
    }
  }
  return r.empty() ? "unknown" : r;
}

std::string device_slug(const DeviceInfo& dev) {
  return dev.backend == Backend::cpu ? "cpu" : slugify(dev.name);
}

std::string problem_key(const Params& problem) {
  Params p = problem;
  p.erase("tokens");
  // The scale format means something for fp8 only: bf16 and f16 keys stay as they were.
  if (p.has("scale_fmt") && !(p.has("dtype") && p.at("dtype") == Value(std::string("fp8")))) p.erase("scale_fmt");
  // The expert function's parameters only where they change what the stage computes, so keys of
  // silu on split w13 without biases read as before they existed.
  const auto is = [&p](const char* k, Value v) { return p.has(k) && p.at(k) == v; };
  const bool down = is("stage", std::string("down")), up = is("stage", std::string("up"));
  if (down || !is("activation", std::string("swiglu_oai"))) p.erase("activation"), p.erase("alpha"), p.erase("limit");
  if (down || !is("w13_layout", std::string("interleaved"))) p.erase("w13_layout"), p.erase("w13_block");
  if (down || !is("bias13", std::int64_t{1})) p.erase("bias13");
  if (up || !is("bias2", std::int64_t{1})) p.erase("bias2");
  // So do int4's group and zero points for int4 (mxfp4's group is fixed at 32).
  if (!(p.has("dtype") && p.at("dtype") == Value(std::string("int4"))))
    for (const char* k : {"group", "zero_point"}) p.erase(k);
  return p.str();
}

// File systems refuse a name over 255 bytes, and a layer with gpt-oss's expert function has a
// longer key: such a key keeps its first 160 bytes and ends with a hash of the whole key (the
// table inside still names its full problem), so every reader and writer computes the same name.
static std::string table_file_name(const std::string& key) {
  constexpr std::size_t kLongest = 200, kKept = 160;
  if (key.size() <= kLongest) return key + ".json";
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return key.substr(0, kKept) + "~" + hex + ".json";
}

std::string table_path(const std::string& dir, const std::string& device, const std::string& kernel,
                       const std::string& key) {
  return (fs::path(dir) / device / kernel / table_file_name(key)).string();
}

// An engine that found the package with find_package(moebench) compiles a one-line source
// that defines this, returning the package's share/moebench/configs as found at configure time
// (cmake/moebenchConfig.cmake.in): the installed tables follow the prefix wherever it was
// installed or moved to. Weak, so the moebench binary and the tests link without it.
extern "C" const char* moebench_installed_config_dir() __attribute__((weak));

// The shipped tables: the package's (for an engine), else share/moebench/configs beside the
// running binary (an installed moebench), else the source tree's (a build tree).
static std::string shipped_table_dir() {
  std::error_code ec;
  if (moebench_installed_config_dir) return moebench_installed_config_dir();
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = (exe.parent_path() / ".." / "share" / "moebench" / "configs").lexically_normal();
    if (fs::is_directory(beside, ec)) return beside.string();
  }
  return MOEBENCH_SOURCE_CONFIG_DIR;
}

std::vector<std::string> default_table_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("MOEBENCH_CONFIG_DIR"); env && *env) {
    std::string s = env;
    std::size_t b = 0;
    while (b <= s.size()) {
      const std::size_t e = std::min(s.find(':', b), s.size());
      if (e > b) dirs.push_back(s.substr(b, e - b));
      b = e + 1;
    }
    if (!dirs.empty()) return dirs;
  }
  // ./configs is where `moebench sweep` writes by default, so what a user just tuned is found
  // first; the shipped tables come after it.
  std::error_code ec;
  const std::string shipped = shipped_table_dir();
  if (fs::is_directory("configs", ec) && !fs::equivalent("configs", shipped, ec)) dirs.push_back("configs");
  dirs.push_back(shipped);
  return dirs;
}

std::int64_t token_count_key(const std::string& k) {
  // Digits only: stoll alone would take " 12" and "12abc" as 12, and throw on 20 digits.
  if (k.empty() || k.size() > 18 || k.find_first_not_of("0123456789") != std::string::npos) return -1;
  const std::int64_t v = std::stoll(k);
  return v >= 1 ? v : -1;
}

static std::int64_t parse_tokens_key(const std::string& k, const std::string& path) {
  const std::int64_t v = token_count_key(k);
  if (v < 1)
    throw Error("config table " + path + ": entry key '" + k + "' is not a token count; regenerate it with `moebench sweep`");
  return v;
}

ConfigTable load_table(const std::string& path) {
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    throw Error("config table " + path + " " + why + ": remove it, or regenerate it with `moebench sweep`");
  std::string text, why;
  if (!io::read_whole_file(path, text, why))
    throw Error("cannot read config table " + path + " (" + why + "): fix its permissions, or regenerate it with `moebench sweep`");
  io::check_json_text(text, "config table " + path, "regenerate it with `moebench sweep`");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("config table " + path + " is not valid JSON (" + e.what() + "); regenerate it with `moebench sweep`");
  }
  const auto fail = [&](const std::string& what) {
    return Error("config table " + path + ": " + what + "; regenerate it with `moebench sweep`");
  };
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kTableSchema)
    throw fail(std::string("schema is not ") + kTableSchema);
  // Every field is read by type: an edited table is the user's to fix, never an internal error.
  ConfigTable t;
  t.path = path;
  try {
    t.kernel = j.at("kernel").get<std::string>();
    t.backend = j.value("backend", "");
    t.device = j.value("device", "");
    t.problem_key = j.value("problem_key", "");
    if (j.contains("build") && j["build"].is_object()) t.build_id = j["build"].value("id", "");
    if (!j.at("entries").is_object()) throw fail("entries is not an object");
    for (auto& [k, e] : j.at("entries").items()) {
      TableEntry te;
      te.tokens = parse_tokens_key(k, path);
      te.config = params_from_json(e.at("config"), "config table " + path + " entry " + k);
      te.median_us = e.value("median_us", 0.0);
      te.kept_default = e.value("kept_default", false);
      if (e.contains("runner_up") && e["runner_up"].is_object()) {
        te.has_runner_up = true;
        te.runner_up = params_from_json(e["runner_up"].at("config"), "config table " + path + " runner-up " + k);
        te.runner_up_median_us = e["runner_up"].value("median_us", 0.0);
      }
      t.entries[te.tokens] = std::move(te);
    }
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("unexpected layout (") + e.what() + ")");
  }
  t.keys.reserve(t.entries.size());
  for (auto& [k, e] : t.entries) t.keys.push_back(k);
  return t;
}

std::shared_ptr<const ConfigTable> cached_table(const std::string& path) {
  struct Slot {
    fs::file_time_type mtime;
    std::shared_ptr<const ConfigTable> table;
  };
  static std::mutex mu;
  static std::map<std::string, Slot> cache;
  std::error_code ec;
  const auto mtime = fs::last_write_time(path, ec);
  std::lock_guard lock(mu);
  if (ec) {
    cache.erase(path);
    return nullptr;
  }
  auto it = cache.find(path);
  if (it != cache.end() && it->second.mtime == mtime) return it->second.table;
  auto t = std::make_shared<const ConfigTable>(load_table(path));
  cache[path] = Slot{mtime, t};
  return t;
}

}  // namespace moe::runtime
