#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "app/flag_spelling.hpp"
#include "moe/error.hpp"
#include "tuner/base/interrupt.hpp"
#include "tuner/base/version.hpp"

namespace {

// "moebench sweep": the command whose options were being parsed, for the --help hint.
std::string command_path(const CLI::App& root) {
  std::string path = "moebench";
  const CLI::App* at = &root;
  while (!at->get_subcommands().empty()) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

}  // namespace

// Exit statuses are decided here alone (docs/exit-codes.md): commands throw moe::Error for what
// the user must fix (2) and CLI::RuntimeError(1 or 130) for a run whose outcome is a failure.
int main(int argc, char** argv) {
  // Past a file size limit (ulimit -f) a write fails with EFBIG, which every writer reports
  // naming its file; the signal would instead end the process with no word, mid-sweep. Workers
  // inherit the setting across exec.
  ::signal(SIGXFSZ, SIG_IGN);
  CLI::App root{"moebench: benchmark, validate and autotune the kernels of a Mixture-of-Experts layer"};
  root.set_version_flag("--version", moe::tuner::version_string());
  root.require_subcommand(1);
  root.fallthrough(false);
  root.name("moebench");
  root.footer(moe::app::kExitStatusHelp);
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
    // CLI11 wants the arguments last to first.
    std::vector<std::string> args = moe::app::respelled_args(root, argc, argv);
    std::reverse(args.begin(), args.end());
    root.parse(args);
  } catch (const CLI::Success& e) {
    return root.exit(e);  // --help, --version
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command has said why
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "moebench: error: %s (see `%s --help`)\n", e.what(), command_path(root).c_str());
    return 2;
  } catch (const moe::tuner::StopRequested& e) {
    std::fprintf(stderr, "moebench: interrupted: %s\n", e.what());
    return 130;
  } catch (const moe::Error& e) {
    std::fprintf(stderr, "moebench: error: %s\n", e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the system refuses (a symlink loop, a name too long): its what() names it.
    std::fprintf(stderr, "moebench: error: %s: check the path\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Footprints are checked before allocating; this is what those estimates missed.
    std::fprintf(stderr,
                 "moebench: error: out of memory: the problem does not fit in this machine's memory; use fewer "
                 "tokens, or shard with --ep N (fewer local experts) or --tp N (smaller intermediate)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: internal error: %s (a bug in moebench: please report it with the command line)\n",
                 e.what());
    return 3;
  }
  return 0;
}
