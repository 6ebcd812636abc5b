#include <fcntl.h>

#include <memory>

#include "app/commands.hpp"
#include "moe/error.hpp"
#include "tuner/run/worker.hpp"

namespace moe::app {

void add_worker_command(CLI::App& root) {
  auto* cmd = root.add_subcommand("worker", "internal: a sweep's worker process");
  cmd->group("");  // hidden: `moebench sweep` starts it with its pipes on fds 0 and 3
  // An open fd 3 alone proves nothing (test runners and shells leave descriptors open), so
  // the sweep also passes --attached.
  auto attached = std::make_shared<bool>(false);
  cmd->add_flag("--attached", *attached, "set by moebench sweep")->group("");
  cmd->callback([attached] {
    if (!*attached || ::fcntl(3, F_GETFD) < 0)
      throw Error("`moebench worker` is started by `moebench sweep` with its pipes attached; it is not run by hand");
    const int rc = tuner::worker_main(0, 3, tuner::library_families());
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace moe::app
