// TEMPORARY: the tuner branch replaces these with app/cmd_{sweep,worker,compare,lookup,merge}.cpp
// and deletes this file.
#include "app/commands.hpp"

namespace moe::app {
void add_sweep_command(CLI::App&) {}
void add_worker_command(CLI::App&) {}
void add_compare_command(CLI::App&) {}
void add_lookup_command(CLI::App&) {}
void add_merge_command(CLI::App&) {}
}  // namespace moe::app
