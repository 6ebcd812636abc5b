#include "tuner/run/resume.hpp"

#include <filesystem>

#include "tuner/base/temp_file.hpp"

namespace fs = std::filesystem;

namespace moe::tuner {

void load_resume_cache(SweepState& s, const JournalContents& old, bool retry_failed) {
  for (auto& l : old.lines) {
    const std::string type = l.value("type", "");
    if (type == "eval") {
      const std::string key = eval_key(l.value("point", ""), l.value("config_key", ""), l.value("round", 0));
      const std::string status = l.value("status", "");
      if (retry_failed && (status == "crashed" || status == "timeout") && !l.value("retry", false)) {
        s.retry.insert(key);  // measured again; the retry's line replaces this one
        continue;
      }
      s.cache_eval[key] = l;
      s.retry.erase(key);  // the retry already happened
    } else if (type == "prep") {
      s.cache_prep[l.value("point", "")] = l;
    } else if (type == "point") {
      s.cache_point[l.value("point", "")] = l;
    }
  }
}

void remove_stale_temp_files(const std::string& out_dir) {
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const char* base : {"results.json", "results.csv", "summary.md", "journal.jsonl"})
      if (is_temp_name_of(name, base)) {
        std::error_code rm;
        fs::remove(it->path(), rm);
      }
  }
}

}  // namespace moe::tuner
