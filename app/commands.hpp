#pragma once
// Each command lives in its own app/cmd_<name>.cpp and registers itself on the root app.
// Commands parse arguments and call into tuner/ and kernels/; they decide nothing themselves.
#include <CLI/CLI.hpp>

namespace moe::app {

void add_devices_command(CLI::App& root);
void add_list_command(CLI::App& root);
void add_run_command(CLI::App& root);
void add_sweep_command(CLI::App& root);
void add_worker_command(CLI::App& root);
void add_compare_command(CLI::App& root);
void add_lookup_command(CLI::App& root);
void add_merge_command(CLI::App& root);
void add_kernel_static_command(CLI::App& root);

}  // namespace moe::app
