#pragma once
// Joins the outputs of shards (`--shard i/n`, possibly on other machines) into one sweep:
// one journal with every line once, and results, CSV, summary and tables built from it.
// Inputs are sweep directories (or their journal.jsonl files); all must come from the same
// binary, device, space and settings.
#include <string>
#include <vector>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

struct MergeOutcome {
  int inputs = 0, lines = 0, duplicates = 0;
  std::vector<int> shards_missing;  // of the n the inputs say there are
  std::string journal_path, results_path, summary_md;
  std::vector<std::string> tables;
  // Layer records the merged tables would now time with other stage configs (layer_records.hpp).
  std::vector<std::string> stale_layer;
  json results;
};

// `command` (the merge's own command line) is the provenance of the merged results and tables.
MergeOutcome merge_sweeps(const std::vector<std::string>& inputs, const std::string& out_dir,
                          const std::string& tables_dir, const std::string& command = "");

}  // namespace moe::tuner
