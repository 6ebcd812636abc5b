#include "tuner/store/merge.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "moe/error.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/layer_records.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/tables.hpp"
#include "tuner/store/tables_dir.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

namespace {

std::string journal_of(const std::string& input) {
  std::error_code ec;
  if (fs::is_directory(input, ec)) return (fs::path(input) / "journal.jsonl").string();
  return input;
}

std::string line_key(const json& l) {
  const std::string type = l.value("type", "");
  if (type == "eval") return "eval\n" + l.value("point", "") + "\n" + l.value("config_key", "") + "\n" + std::to_string(l.value("round", 0));
  return type + "\n" + l.value("point", "");
}

}  // namespace

MergeOutcome merge_sweeps(const std::vector<std::string>& inputs, const std::string& out_dir,
                          const std::string& tables_dir, const std::string& command) {
  if (inputs.empty()) throw Error("merge: give the sweep directories (or journal.jsonl files) of the shards");
  // Writing the merged journal over a shard's would destroy that shard's measurements.
  const auto canonical = [](const std::string& p) {
    std::error_code ec;
    const fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
    if (ec) throw Error("merge: " + p + ": " + ec.message() + ": check the path");  // a symlink loop, a name too long
    return c;
  };
  const fs::path out_journal = canonical((fs::path(out_dir) / "journal.jsonl").string());
  for (auto& in : inputs)
    if (canonical(journal_of(in)) == out_journal)
      throw Error("merge: --out " + out_dir + " is the input " + in + ": give a new directory for the merged sweep");
  if (!tables_dir.empty()) check_tables_dir(tables_dir, "--tables");
  MergeOutcome out;
  JournalContents merged;
  std::map<std::string, std::size_t> seen;  // line key -> its place in the merged journal
  std::set<int> shards;
  int shard_count = 1;
  double wall_s = 0;  // shards run side by side: the slowest is the merged wall time
  json meta;
  for (auto& in : inputs) {
    const std::string path = journal_of(in);
    JournalContents j = read_journal(path);
    if (merged.header.is_null()) {
      merged.header = j.header;
      shard_count = j.header.value("shard", json::object()).value("count", 1);
      try {
        meta = read_results(in).value("meta", json::object());
      } catch (const Error&) {
        meta = json::object();
      }
    } else {
      // Shards differ in their shard field only.
      json a = merged.header, b = j.header;
      for (json* h : {&a, &b}) {
        h->erase("shard");
        h->erase("created");
        h->erase("command");
      }
      if (a != b) {
        // Not resume advice: two different sweeps cannot be merged, whatever is done to them.
        std::string fields;
        const auto differ = [&](const json& x, const json& y, const std::string& at, auto&& self) -> void {
          for (auto& [k, v] : x.items()) {
            if (y.contains(k) && y[k] == v) continue;
            if (at.empty() && v.is_object() && y.contains(k) && y[k].is_object()) self(v, y[k], k + ".", self);
            else fields += (fields.empty() ? "" : ", ") + at + k;
          }
          for (auto& [k, v] : y.items())
            if (!x.contains(k)) fields += (fields.empty() ? "" : ", ") + at + k;
        };
        differ(a, b, "", differ);
        throw Error("merge: " + path + " and " + journal_of(inputs.front()) +
                    " are not shards of one sweep (they differ in " + fields +
                    "): merge the --shard i/n outputs of a single sweep command");
      }
    }
    try {
      wall_s = std::max(wall_s, read_results(in).value("meta", json::object()).value("wall_s", 0.0));
    } catch (const Error&) {
    }
    shards.insert(j.header.value("shard", json::object()).value("index", 0));
    ++out.inputs;
    for (auto& l : j.lines) {
      const auto [it, fresh] = seen.emplace(line_key(l), merged.lines.size());
      if (fresh) {
        merged.lines.push_back(l);
        continue;
      }
      ++out.duplicates;
      // Measured again on resume (a point that ended in an error, a crashed candidate retried): the
      // later outcome wins, as it does when one journal is read.
      json& kept = merged.lines[it->second];
      const std::string type = l.value("type", "");
      if ((type == "point" && !(l.contains("error") && !kept.contains("error"))) ||
          (type == "eval" && l.value("retry", false)))
        kept = l;
    }
  }
  for (int i = 0; i < shard_count; ++i)
    if (!shards.count(i)) out.shards_missing.push_back(i);

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error("merge: cannot create " + out_dir + ": " + ec.message());
  out.journal_path = (fs::path(out_dir) / "journal.jsonl").string();
  json header = merged.header;
  header["shard"] = {{"index", 0}, {"count", 1}};
  header["merged_from"] = inputs;
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  for (auto& l : merged.lines) text += l.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  write_text_atomic(out.journal_path, text);
  out.lines = static_cast<int>(merged.lines.size());

  meta["merged_from"] = inputs;
  if (!command.empty()) meta["command"] = command;  // shard 0's command made none of the merged tables
  meta["shard"] = "merged";
  meta["wall_s"] = wall_s;
  meta["results_path"] = (fs::path(out_dir) / "results.json").string();
  if (!meta.contains("device")) meta["device"] = merged.header.value("device", "");
  if (!meta.contains("device_slug")) meta["device_slug"] = merged.header.value("device_slug", "");
  if (!meta.contains("backend")) meta["backend"] = merged.header.value("backend", "");
  out.results = build_results(merged, meta);
  out.results_path = (fs::path(out_dir) / "results.json").string();
  write_results(out.results_path, out.results);
  write_text_atomic((fs::path(out_dir) / "results.csv").string(), results_csv(out.results));
  out.summary_md = markdown_summary(out.results);
  write_text_atomic((fs::path(out_dir) / "summary.md").string(), out.summary_md);
  if (!tables_dir.empty()) {
    out.tables = write_tables(out.results, tables_dir);
    out.stale_layer = stale_layer_records(out.results, tables_dir);
  }
  return out;
}

}  // namespace moe::tuner
