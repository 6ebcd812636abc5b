#include <fmt/format.h>

#include "app/commands.hpp"
#include "tuner/problem/kernel_static.hpp"

namespace moe::app {

void add_kernel_static_command(CLI::App& root) {
  auto* cmd = root.add_subcommand("kernel-static", "internal: the families' figures scripts/kernel_report.py reads");
  cmd->group("");  // hidden: the script's input, not a user command
  cmd->callback([] { fmt::print("{}\n", tuner::kernel_static_inputs().dump(1)); });
}

}  // namespace moe::app
