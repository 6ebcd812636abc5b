#include "tuner/measure/emu_time.hpp"

#include <fmt/format.h>

#include "common/emu_backend.hpp"
#include "moe/error.hpp"
#include "tuner/base/units.hpp"

namespace moe::tuner {

void check_emu_time(const FamilyDesc& f, const Params& problem, double limit_s) {
  const double s = emu_seconds(f, problem);
  if (s <= limit_s) return;
  const std::int64_t tokens = problem.has("tokens") ? problem.i("tokens") : 0;
  std::int64_t fits = tokens;
  Params smaller = problem;
  while (fits > 1) {
    fits /= 2;
    smaller.set("tokens", fits);
    if (emu_seconds(f, smaller) <= limit_s) break;
  }
  const bool found = fits >= 1 && emu_seconds(f, smaller) <= limit_s;
  throw Error(fmt::format("{} at tokens={} would take about {} per config on the emu backend (the emulator runs the "
                          "kernels on one cpu core, far slower than a GPU; the limit is {}): {}",
                          f.name, tokens, human_duration(s), human_duration(limit_s),
                          found ? fmt::format("use --tokens {} or fewer (about {})", fits, human_duration(emu_seconds(f, smaller)))
                                : std::string("use a smaller shape (fewer experts, a smaller hidden or intermediate size, "
                                              "or --tp to shard it)")));
}

}  // namespace moe::tuner
