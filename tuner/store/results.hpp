#pragma once
// Results (`moebench/results@1`): meta plus one record per (kernel, problem, tokens, config)
// evaluated, and one summary per point. Built from a journal, so a sweep, a resumed sweep and
// a merge of shards all produce them the same way. Times are in microseconds (*_us).
#include <string>
#include <vector>

#include "tuner/store/journal.hpp"

namespace moe::tuner {

inline constexpr const char* kResultsSchema = "moebench/results@1";

// `meta` is copied in; records and points come from the journal lines. Records are ordered by
// point, then by candidate, whatever order devices or shards finished in.
json build_results(const JournalContents& journal, const json& meta);

// Writes `path` through a temporary file and a rename, so readers never see half a file.
void write_text_atomic(const std::string& path, const std::string& text);
void write_results(const std::string& path, const json& results);
// A results file, or a directory holding results.json; Error if it is not results@1.
json read_results(const std::string& path_or_dir);
// One row per record: kernel, problem, tokens, config, status and every statistic.
std::string results_csv(const json& results);

}  // namespace moe::tuner
