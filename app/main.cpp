#include <cstdio>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "moe/error.hpp"
#include "tuner/version.hpp"

int main(int argc, char** argv) {
  CLI::App root{"moebench: benchmark, validate and autotune the kernels of a Mixture-of-Experts layer"};
  root.set_version_flag("--version", moe::tuner::version_string());
  root.require_subcommand(1);
  root.fallthrough(false);
  moe::app::add_devices_command(root);
  moe::app::add_list_command(root);
  moe::app::add_run_command(root);
  moe::app::add_sweep_command(root);
  moe::app::add_worker_command(root);
  moe::app::add_compare_command(root);
  moe::app::add_lookup_command(root);
  moe::app::add_merge_command(root);
  moe::app::add_kernel_static_command(root);
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root.exit(e);
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moebench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
