#include "app/flag_spelling.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "moe/error.hpp"
#include "tuner/base/spelling.hpp"

namespace moe::app {

namespace {

std::string dashed(std::string s) {
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

// Names that vLLM, SGLang and Hugging Face configs use for moebench's flags; a plain typo
// distance would not connect them.
const std::map<std::string, std::string>& habits() {
  static const std::map<std::string, std::string> m = {
      {"num-experts", "experts"},        {"n-routed-experts", "experts"}, {"num-local-experts", "experts"},
      {"num-experts-per-tok", "topk"},   {"top-k", "topk"},               {"hidden-size", "hidden"},
      {"intermediate-size", "intermediate"}, {"moe-intermediate-size", "intermediate"},
      {"n-group", "groups"},             {"num-expert-group", "groups"},  {"n-shared-experts", "shared"},
      {"tp-size", "tp"},                 {"tensor-parallel-size", "tp"},  {"batch-size", "tokens"},
      {"model-config", "hf-config"},     {"config-json", "hf-config"},
  };
  return m;
}

bool looks_like_list_item(const std::string& s) {
  return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) &&
         s.find_first_not_of("0123456789.,-eE+") == std::string::npos;
}

}  // namespace

std::vector<std::string> respelled_args(const CLI::App& root, int argc, const char* const* argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const CLI::App* cmd = nullptr;
  std::size_t i = 0;
  for (; i < args.size() && !cmd; ++i)
    for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == args[i]) cmd = sub;
  if (!cmd) return args;  // CLI11 answers a missing or unknown command

  std::map<std::string, const CLI::Option*> by_dashed;  // "ep-rank" -> its option
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd->get_options())
    for (const std::string& n : opt->get_lnames()) {
      by_dashed[dashed(n)] = opt;
      names.push_back("--" + n);
    }
  const std::string where = "moebench " + cmd->get_name();
  for (; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    const auto nearest = [&](const std::string& name) -> std::string {
      if (auto it = by_dashed.find(dashed(name)); it != by_dashed.end()) return "--" + it->second->get_lnames().front();
      if (auto h = habits().find(dashed(name)); h != habits().end() && by_dashed.count(h->second)) return "--" + h->second;
      return tuner::closest_name("--" + name, names);
    };
    // vLLM's -tp, or --tp typed with one dash: CLI11 would answer with its raw parse error. A
    // negative number (-1) or a word no flag is near goes on to CLI11 as it is.
    if (a.size() >= 3 && a[0] == '-' && a[1] != '-' && std::isalpha(static_cast<unsigned char>(a[1]))) {
      const std::string name = a.substr(1, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 1);
      if (const std::string near = nearest(name); !near.empty())
        throw Error("unknown flag -" + name + ": did you mean " + near + "? (long flags take two dashes; see `" + where +
                    " --help`)");
      continue;
    }
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) continue;
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const auto it = by_dashed.find(dashed(name));
    if (it == by_dashed.end()) {
      const std::string near = nearest(name);
      throw Error("unknown flag --" + name + (near.empty() ? "" : ": did you mean " + near + "?") + " (see `" + where +
                  " --help`)");
    }
    const CLI::Option* opt = it->second;
    const std::string& declared = opt->get_lnames().front();
    std::string spelled = declared;
    for (const std::string& n : opt->get_lnames())
      if (dashed(n) == dashed(name)) spelled = n;
    a = "--" + spelled + (eq == std::string::npos ? "" : a.substr(eq));
    // One value, then more bare numbers: a list written with spaces (vLLM's --batch-size 1 16).
    if (eq == std::string::npos && opt->get_type_size_max() == 1 && opt->get_expected_max() == 1 &&
        i + 2 < args.size() && looks_like_list_item(args[i + 1]) && looks_like_list_item(args[i + 2])) {
      std::string items = args[i + 1];
      for (std::size_t j = i + 2; j < args.size() && looks_like_list_item(args[j]); ++j) items += "," + args[j];
      throw Error("--" + spelled + " " + args[i + 1] + " " + args[i + 2] + "...: lists are comma-separated, as in --" +
                  spelled + " " + items);
    }
  }
  return args;
}

}  // namespace moe::app
