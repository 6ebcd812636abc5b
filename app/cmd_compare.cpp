#include <fmt/format.h>

#include "app/commands.hpp"
#include "moe/error.hpp"
#include "tuner/store/compare.hpp"
#include "tuner/store/results.hpp"
#include "tuner/base/units.hpp"

namespace moe::app {

void add_compare_command(CLI::App& root) {
  struct Args {
    std::string base, now, threshold = "5%", fail_on = "none";
  };
  auto a = std::make_shared<Args>();
  auto* cmd = root.add_subcommand("compare", "compare two results files: FAST/SLOW/SAME/NOISY per record, geometric mean");
  cmd->add_option("BASE", a->base, "baseline results (results.json or its sweep directory)")->required();
  cmd->add_option("NEW", a->now, "new results (results.json or its sweep directory)")->required();
  cmd->add_option("--threshold", a->threshold, "a change of the median beyond this is FAST or SLOW (or NOISY)")
      ->default_str("5%");
  cmd->add_option("--fail-on", a->fail_on, "exit 1 when any record is SLOW (or BROKEN): slow | none")
      ->check(CLI::IsMember({"slow", "none"}))
      ->default_str("none");
  cmd->footer("Exit status: 0 compared; 1 SLOW or BROKEN records, with --fail-on slow; 2 usage or input error (a file "
              "unreadable or not results); 3 internal error (a bug: please report it). See docs/exit-codes.md.");
  cmd->callback([a] {
    const double thr = tuner::parse_fraction(a->threshold, "--threshold");
    const auto rep = tuner::compare_results(tuner::read_results(a->base), tuner::read_results(a->now), thr);
    // Nothing compared is no verdict: a geometric mean of 1.000 would read as "no change".
    if (rep.rows.empty())
      throw Error("no record of BASE matches one of NEW (" + std::to_string(rep.only_base) + " only in BASE, " +
                  std::to_string(rep.only_new) + " only in NEW): records match on kernel, problem, token count and "
                  "config, so compare sweeps of the same problems");
    fmt::print("{}", tuner::compare_markdown(rep, thr));
    const int bad = rep.count(tuner::Verdict::slow) + rep.count(tuner::Verdict::broken);
    if (a->fail_on == "slow" && bad > 0) {
      fmt::print(stderr, "moebench: {} record(s) SLOW or BROKEN beyond {:.1f}%\n", bad, thr * 100);
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace moe::app
