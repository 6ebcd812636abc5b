#include <fmt/format.h>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "tuner/store/merge.hpp"
#include "tuner/store/report.hpp"

namespace moe::app {

void add_merge_command(CLI::App& root) {
  struct Args {
    std::vector<std::string> inputs;
    std::string out, tables = "none";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = root.add_subcommand("merge", "join the journals and results of sweep shards (--shard i/n) into one sweep");
  cmd->add_option("INPUTS", a->inputs, "the shards' --out directories (or their journal.jsonl)")->required();
  cmd->add_option("--out", a->out, "directory for the merged journal, results and summary")->required();
  cmd->add_option("--tables", a->tables, "also write config tables under this directory (none: do not)")
      ->default_str("none");
  cmd->footer("Exit status: 0 merged (missing shards are a warning); 2 usage or input error (inputs that do not "
              "belong together, an unreadable input); 3 internal error (a bug: please report it). See docs/exit-codes.md.");
  cmd->callback([a] {
    const auto m = tuner::merge_sweeps(a->inputs, a->out, a->tables == "none" ? "" : a->tables, shell_join(command_argv()));
    fmt::print("{}\n", tuner::printed_summary(m.results));
    fmt::print("merged {} input(s): {} journal lines ({} duplicates dropped) into {}\n", m.inputs, m.lines, m.duplicates,
               a->out);
    for (auto& t : m.tables) fmt::print("table: {}\n", t);
    if (!m.stale_layer.empty()) {
      // Each shard timed the layer with its own stage tables; the merged ones choose otherwise.
      fmt::print(stderr,
                 "moebench: warning: {} moe-layer record(s) were timed with stage configs the merged tables in {} "
                 "no longer choose (e.g. {}); re-time them with `moebench sweep moe-layer` and the same problem flags "
                 "with --tables {}\n",
                 m.stale_layer.size(), a->tables, m.stale_layer.front(), a->tables);
    }
    if (!m.shards_missing.empty()) {
      std::string s;
      for (int i : m.shards_missing) s += (s.empty() ? "" : ", ") + std::to_string(i);
      fmt::print(stderr, "moebench: warning: shard(s) {} of the sweep are missing from the inputs\n", s);
    }
  });
}

}  // namespace moe::app
