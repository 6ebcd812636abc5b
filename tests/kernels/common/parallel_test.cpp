// parallel_for when the system has no thread to give: the work is still done, in the calling
// thread, instead of std::terminate on a joinable std::thread.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "common/parallel.hpp"

namespace {

// This process's address-space size in bytes (VmSize).
double vm_size() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stod(line.substr(7)) * 1024;
  return 0;
}

}  // namespace

TEST(ParallelFor, ThreadCreationFailureStillDoesEveryChunk) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Room for a couple of 8 MB thread stacks at most: later threads cannot be created.
    std::vector<int> hit(4096, 0);
    // One reading for both limits: reading /proc allocates, and a second reading may be larger
    // than the first, which setrlimit refuses (soft above hard).
    const auto room = static_cast<rlim_t>(vm_size() + 20e6);
    const rlimit lim{room, room};
    if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(3);
    moe::parallel_for(4096, 64, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) hit[i] += 1;
    });
    for (int h : hit)
      if (h != 1) ::_exit(4);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
