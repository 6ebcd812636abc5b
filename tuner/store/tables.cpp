#include "tuner/store/tables.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <cstdio>
#include <map>

#include "io/json_text.hpp"
#include "io/read_file.hpp"
#include "io/regular_file.hpp"
#include "moe/error.hpp"
#include "runtime/build_id.hpp"
#include "runtime/table.hpp"
#include "tuner/base/file_lock.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/table_entries.hpp"
#include "tuner/base/units.hpp"

namespace moe::tuner {

namespace {

std::string compact_utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", std::gmtime(&t));
  return buf;
}

// The existing table's entries. A file in the table's place that cannot be read as a table (a
// typo, a torn copy, a key that is no token count) is never dropped silently: it is kept beside
// as NAME.corrupt-<time>, and the warning says so, before the new table takes its place.
TableEntries existing_entries(const std::string& path) {
  if (const std::string why = table_place_problem(path); !why.empty()) throw Error(why);
  TableEntries entries;
  std::string text, why;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return entries;
  if (!io::read_whole_file(path, text, why))
    throw Error("cannot read the existing table " + path + " (" + why + "): fix its permissions or move it away");
  std::string fault = io::json_text_problem(text);
  if (fault.empty()) fault = entries.read(text);
  if (fault.empty()) return entries;
  const std::string kept = path + ".corrupt-" + compact_utc_now();
  std::filesystem::rename(path, kept, ec);
  if (ec)
    throw Error("config table " + path + " " + fault + ", and it cannot be moved aside (" + ec.message() +
                "): move it away yourself, then write the tables again with `moebench merge --tables`");
  std::fprintf(stderr, "moebench: warning: config table %s %s: kept it as %s and wrote a new table in its place\n",
               path.c_str(), fault.c_str(), kept.c_str());
  return TableEntries();
}

}  // namespace

std::string table_place_problem(const std::string& path) {
  if (const std::string why = io::not_a_regular_file(path); !why.empty())
    return "cannot write config table " + path + ": it " + why + "; remove it or give another --tables";
  return "";
}

void check_table_places(const std::string& dir, const std::string& device_slug,
                        const std::vector<std::pair<std::string, std::string>>& kernel_keys) {
  for (auto& [kernel, key] : kernel_keys)
    if (const std::string why = table_place_problem(runtime::table_path(dir, device_slug, kernel, key)); !why.empty())
      throw Error(why);
}

std::vector<std::string> write_tables(const json& results, const std::string& dir) {
  const json& meta = results.value("meta", json::object());
  const std::string slug = meta.value("device_slug", "unknown");
  std::map<std::string, std::vector<const json*>> groups;  // kernel + problem key -> points
  std::map<std::string, const json*> problem_of;
  for (auto& r : results["records"]) problem_of[r.value("kernel", "") + "\n" + r.value("problem_key", "")] = &r;
  for (auto& p : results["points"])
    if (p.contains("chosen")) groups[p.value("kernel", "") + "\n" + p.value("problem_key", "")].push_back(&p);
  std::vector<std::string> written;
  for (auto& [gk, pts] : groups) {
    const std::string kernel = pts.front()->value("kernel", ""), key = pts.front()->value("problem_key", "");
    const std::string path = runtime::table_path(dir, slug, kernel, key);
    // Other sweeps (the shards of a job array) may write this table now: read, merge and replace
    // it under a lock, so no entry of theirs is lost.
    const DirLock lock(std::filesystem::path(path).parent_path().string());
    auto entries = existing_entries(path);
    for (const json* p : pts) {
      nlohmann::ordered_json e;
      e["config"] = (*p)["chosen"]["config"];
      e["median_us"] = (*p)["chosen"]["median_us"];
      if (p->contains("speedup_vs_default")) e["speedup_vs_default"] = (*p)["speedup_vs_default"];
      e["kept_default"] = p->value("kept_default", false);
      if (p->contains("runner_up"))
        e["runner_up"] = {{"config", (*p)["runner_up"]["config"]}, {"median_us", (*p)["runner_up"]["median_us"]}};
      if (p->contains("default")) e["default_median_us"] = (*p)["default"]["median_us"];
      e["evaluated"] = p->value("evaluated", 0);
      e["total"] = p->value("total", 0);
      entries.put(p->value("tokens", std::int64_t{0}), std::move(e));
    }
    nlohmann::ordered_json t;
    t["schema"] = runtime::kTableSchema;
    t["kernel"] = kernel;
    t["backend"] = meta.value("backend", "");
    t["device"] = slug;
    t["device_name"] = meta.value("device", "");
    const json* rec = problem_of.count(gk) ? problem_of[gk] : nullptr;
    t["problem"] = rec ? (*rec)["problem"] : json::object();
    t["problem_key"] = key;
    if (pts.front()->contains("default")) t["default_config"] = (*pts.front())["default"]["config"];
    // What built and ran the tuned kernels: runtime dispatch ignores the table under another build id.
    t["build"] = {{"id", runtime::family_build_id(kernel)}, {"cuda_runtime", meta.value("cuda_runtime", "")},
                  {"driver", meta.value("driver", "")}, {"device_name", meta.value("device", "")},
                  {"sm_count", meta.value("sm_count", 0)}};
    t["provenance"] = {{"moebench", meta.value("version", "")}, {"git", meta.value("git", "")},
                       {"command", meta.value("command", "")}, {"written", utc_now()},
                       {"timer", meta.value("timer", json())}, {"strategy", meta.value("strategy", "")},
                       {"seed", meta.value("seed", 0)}, {"results", meta.value("results_path", "")}};
    t["entries"] = entries.take_json();  // in numeric token order, for people reading the file
    write_text_atomic(path, t.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    written.push_back(path);
  }
  return written;
}

}  // namespace moe::tuner
