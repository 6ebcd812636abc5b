// A sweep under a file size limit (ulimit -f, RLIMIT_FSIZE): the write past it fails (EFBIG)
// instead of the process dying of SIGXFSZ with no word; the error names the file, exit 2, what
// was written before stays, and the sweep resumes once the limit is lifted.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "moe/family.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/results.hpp"

using moe::testing::slurp;
namespace fs = std::filesystem;

namespace {

struct Ran {
  int status = -1;  // the exit status, or 128 + the signal that ended it
  std::string out;  // stdout and stderr
};

// Runs moebench with `args`, its files limited to `limit` bytes (0: no limit).
Ran moebench(const std::vector<std::string>& args, rlim_t limit, const fs::path& log) {
  std::vector<std::string> argv = {MOEBENCH_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (auto& a : argv) c.push_back(const_cast<char*>(a.c_str()));
  c.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (limit > 0) {
      const rlimit l{limit, limit};
      if (::setrlimit(RLIMIT_FSIZE, &l) != 0) ::_exit(126);
    }
    ::execv(c[0], c.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), slurp(log)};
}

}  // namespace

TEST(FileSizeLimit, WritePastTheLimitNamesTheFileAndTheSweepResumes) {
  if (!moe::family("router").backend(moe::Backend::cpu)) GTEST_SKIP() << "the router family has no cpu backend in this build";
  const fs::path d = moe::testing::fresh_temp_dir("fsize");
  const fs::path out = d / "s";
  const std::vector<std::string> sweep = {"sweep", "router", "--backend", "cpu", "--threads", "2", "--experts", "16", "--topk", "2",
                                          "--tokens", "1-64", "--strategy", "exhaustive", "--min-time", "1ms", "--max-time",
                                          "20ms", "--quiet", "--tables", "none", "--out", out.string()};
  // The journal's header and a few records fit; the whole sweep's do not.
  const Ran cut = moebench(sweep, 16 * 1024, d / "log1");
  EXPECT_EQ(cut.status, 2) << cut.out;
  const auto at = cut.out.find("moebench: error: ");
  ASSERT_NE(at, std::string::npos) << cut.out;
  const std::string error = cut.out.substr(at);
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << error;
  EXPECT_NE(error.find("File too large"), std::string::npos) << error;
  EXPECT_NE(error.find((out / "journal.jsonl").string()), std::string::npos) << error;
  EXPECT_EQ(error.find(".tmp"), std::string::npos) << error;
  const moe::tuner::JournalContents before = moe::tuner::read_journal((out / "journal.jsonl").string());
  ASSERT_GT(before.lines.size(), 0u);

  const Ran resumed = moebench([&] {
    auto a = sweep;
    a.push_back("--resume");
    return a;
  }(), 0, d / "log2");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  const moe::tuner::JournalContents after = moe::tuner::read_journal((out / "journal.jsonl").string());
  ASSERT_GE(after.lines.size(), before.lines.size());
  for (std::size_t i = 0; i < before.lines.size(); ++i) EXPECT_EQ(after.lines[i], before.lines[i]) << "line " << i;
  EXPECT_EQ(moe::tuner::read_results(out.string())["points"].size(), 7u);
  fs::remove_all(d);
}
