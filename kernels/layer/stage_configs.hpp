#pragma once
// The configs the layer runs its five stages with. The layer config gives each stage as text:
// "auto" (runtime dispatch's choice from the tuned tables, as `moebench lookup` shows it),
// "default" (the stage family's default config) or NAME=VALUE;NAME=VALUE over that default.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layer/stages.hpp"
#include "moe/family.hpp"

namespace moe {

struct StageChoice {
  Params config;         // complete and valid for the stage problem
  std::string how;       // "explicit", "family default", or runtime dispatch's "exact" | "nearest" | "default"
  std::string table;     // auto: the table used, or where it was expected
  std::int64_t key = 0;  // auto from a table: the entry's token count
  std::string warning;   // auto: set when no usable table gave the config
};

// One layer problem (with tokens) and config, resolved: what run_layer needs on every call.
struct ResolvedLayer {
  std::vector<Stage> stages;         // layer_stages(problem), in pipeline order
  std::vector<StageChoice> choices;  // one per stage
  std::size_t stage_workspace = 0;   // the most any stage needs, with its config
};

// Resolves every stage; "auto" looks in `dirs` in order. An explicit text that does not parse
// or that the stage family rejects is an Error naming the stage. `quiet`: no warning on stderr
// when auto falls back to a default (it is still in StageChoice::warning).
ResolvedLayer resolve_layer(Backend b, const Params& layer_problem, const Params& config, const DeviceInfo& dev,
                            const std::vector<std::string>& dirs, bool quiet);

// resolve_layer over runtime dispatch's table dirs, once per (backend, device ordinal, cpu
// threads, problem, config, $MOEBENCH_CONFIG_DIR) per process: a table lookup stats files and
// allocates, too much for every call of a layer that runs in microseconds. A hit allocates
// nothing and is safe from any thread. Like moe::Kernel, which resolves at construction, a
// process does not see a table written after its first call for that problem.
std::shared_ptr<const ResolvedLayer> cached_resolved_layer(Backend b, const Params& layer_problem, const Params& config,
                                                           int ordinal, int threads);

// The layer config text that pins a stage to `config` ("a=1;b=x"): explicit, so it runs the
// same wherever the tables are.
std::string stage_config_text(const Params& config);

}  // namespace moe
