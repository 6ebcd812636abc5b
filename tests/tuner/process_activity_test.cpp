// The watchdog's readings of /proc (tuner/run/process_activity.cpp) never throw: a read that fails
// after its open succeeded (a worker exiting between the two fails it with ESRCH; a directory
// fails it with EISDIR, which this test can make happen at will) gives an empty text and an
// unknown, busy reading, as a process that cannot be read at all does.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tuner/run/process_activity.hpp"

namespace moe::tuner {
namespace {

TEST(ProcessActivity, AReadThatFailsAfterItsOpenIsAnEmptyTextNotAnException) {
  std::string text = "poison";
  EXPECT_NO_THROW(text = read_proc_text("/proc/self"));  // opens, then read() fails: EISDIR
  EXPECT_EQ(text, "");
  EXPECT_EQ(read_proc_text("/proc/self/no-such-file"), "");
  const std::string stat = read_proc_text("/proc/self/stat");
  EXPECT_NE(stat.find(") "), std::string::npos) << stat;
}

TEST(ProcessActivity, AReapedProcessReadsAsUnknownAndBusy) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const ProcessActivity a = process_activity(pid);
  EXPECT_EQ(a.cpu_ticks, -1);
  EXPECT_TRUE(a.busy);
  const ProcessActivity self = process_activity(::getpid());
  EXPECT_GE(self.cpu_ticks, 0);
}

}  // namespace
}  // namespace moe::tuner
