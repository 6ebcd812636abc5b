#pragma once
// Each command lives in its own app/cmd_<name>.cpp and registers itself on the root app.
// Commands parse arguments and call into tuner/ and kernels/; they decide nothing themselves.
#include <CLI/CLI.hpp>

namespace moe::app {

// The footer of `moebench --help`, which subcommands inherit unless they say it their own way
// (docs/exit-codes.md says it at length).
inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 success; 1 it ran, but a check failed (run: output does not match the reference; "
    "sweep: points could not run; compare --fail-on slow: SLOW or BROKEN records); 2 usage or input error "
    "(one `moebench: error:` line says what to do); 3 internal error (a bug: please report it); "
    "130 interrupted (sweep prints the command that resumes).";

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
