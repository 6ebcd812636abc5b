#include "layer/stage_configs.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/lookup.hpp"
#include "runtime/table.hpp"

namespace moe {

namespace {

StageChoice explicit_choice(const FamilyDesc& f, const BackendImpl& impl, const Stage& s, const std::string& text,
                            const DeviceInfo& dev) {
  // Every message names the stage: the layer config has five texts to look through.
  const std::string what = "layer stage " + s.name + " (" + f.name + ")";
  StageChoice ch;
  ch.how = "explicit";
  try {
    std::string commas = text;
    std::replace(commas.begin(), commas.end(), ';', ',');
    const Params given = parse_assignments(impl.config_params, commas, what);
    // Checked here, not at the first launch: an invalid stage config makes the layer config invalid.
    ch.config = fill_config(impl, s.problem, given, dev, "completed as");
  } catch (const Error& e) {
    throw Error(what + " config '" + text + "': " + e.what());
  }
  return ch;
}

// The cache key, compared field by field so that a lookup builds no string.
struct Key {
  Backend b;
  int ordinal, threads;
  Params problem, config;
  std::string dirs_env;
};
struct KeyView {
  Backend b;
  int ordinal, threads;
  const Params& problem;
  const Params& config;
  std::string_view dirs_env;
};
auto fields(const Key& k) { return std::tie(k.b, k.ordinal, k.threads, k.problem, k.config); }
auto fields(const KeyView& k) { return std::tie(k.b, k.ordinal, k.threads, k.problem, k.config); }
struct KeyLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    if (fields(a) < fields(b)) return true;
    if (fields(b) < fields(a)) return false;
    return std::string_view(a.dirs_env) < std::string_view(b.dirs_env);
  }
};

}  // namespace

ResolvedLayer resolve_layer(Backend b, const Params& L, const Params& config, const DeviceInfo& dev,
                            const std::vector<std::string>& dirs, bool quiet) {
  ResolvedLayer r;
  r.stages = layer_stages(L);
  for (const Stage& s : r.stages) {
    const FamilyDesc& f = family(s.family);
    const BackendImpl& impl = f.need_backend(b);
    const std::string& text = config.s(s.name);
    StageChoice ch;
    // The emu backend times nothing and so has no tables: its auto is the stage's default.
    if (text == "auto" && b != Backend::emu) {
      // Quiet: five stages' full warnings ran to ~2500 characters; one short line each is said below.
      runtime::Choice c = runtime::choose_config(f, b, s.problem, dev, dirs, true);
      ch.config = std::move(c.config);
      ch.how = std::string(runtime::match_name(c.how));
      ch.table = std::move(c.table);
      ch.key = c.key;
      if (c.missing)
        ch.warning = "no " + f.name + " table under " + (dirs.empty() ? std::string(".") : dirs.front()) +
                     " for this problem; its default config runs";
      else if (c.how == runtime::Match::fallback)
        ch.warning = c.reason + "; its default config runs";
    } else if (text == "default" || text == "auto") {
      // The stage family's default config, whatever the tables say: the layer's baseline.
      ch.config = complete(impl.config_params, impl.default_config(s.problem, dev), f.name + " default config");
      ch.how = text == "auto" ? "default" : "family default";
    } else {
      ch = explicit_choice(f, impl, s, text, dev);
    }
    if (impl.workspace_bytes) r.stage_workspace = std::max(r.stage_workspace, impl.workspace_bytes(s.problem, ch.config));
    r.choices.push_back(std::move(ch));
  }
  if (!quiet) {
    bool fell_back = false;
    for (std::size_t i = 0; i < r.stages.size(); ++i)
      if (!r.choices[i].warning.empty()) {
        runtime::warn_once(r.choices[i].table, "moe-layer stage " + r.stages[i].name + ": " + r.choices[i].warning);
        fell_back = true;
      }
    // One command makes every stage's table: the layer's own sweep.
    if (fell_back) {
      const std::string cmd =
          runtime::sweep_command(family("moe-layer"), b, L, dirs.empty() ? std::string(".") : dirs.front());
      runtime::warn_once(cmd, "moe-layer: tune its stages with: " + cmd);
    }
  }
  return r;
}

std::shared_ptr<const ResolvedLayer> cached_resolved_layer(Backend b, const Params& L, const Params& config, int ordinal,
                                                           int threads) {
  // Bounded so that a process serving many token counts does not grow without end; a cleared
  // entry stays alive for whoever holds it.
  constexpr std::size_t kMaxEntries = 256;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const ResolvedLayer>, KeyLess> cache;
  const char* env = std::getenv("MOEBENCH_CONFIG_DIR");
  const KeyView view{b, ordinal, threads, L, config, env ? std::string_view(env) : std::string_view()};
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(view); it != cache.end()) return it->second;
  }
  // Resolved outside the lock: a first call reads tables, and other problems need not wait for it.
  const DeviceInfo dev = b == Backend::cuda ? cuda_device_info(ordinal) : cpu_device_info(threads);
  auto resolved = std::make_shared<const ResolvedLayer>(resolve_layer(b, L, config, dev, runtime::default_table_dirs(), false));
  std::lock_guard lock(mu);
  if (cache.size() >= kMaxEntries) cache.clear();
  // Two threads may both have resolved it; the first one stored wins, so every caller shares one.
  return cache.emplace(Key{b, ordinal, threads, L, config, std::string(view.dirs_env)}, std::move(resolved)).first->second;
}

std::string stage_config_text(const Params& config) {
  std::string t = config.str();
  std::replace(t.begin(), t.end(), ',', ';');
  return t;
}

}  // namespace moe
