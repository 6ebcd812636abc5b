// The command an interrupted sweep prints to resume it (on stderr, and as the --json `done`
// event's "resume"): pasted into a shell it runs this binary on the same folder, whatever the
// folder's name holds: quotes, $(...), backquotes, spaces, a newline.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "moe/family.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/store/results.hpp"

using moe::testing::slurp;
using moe::tuner::json;
namespace fs = std::filesystem;

namespace {

// Runs `argv` (no shell between) in `cwd`, stdout and stderr to files; returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& out, const fs::path& err) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::size_t evals(const fs::path& journal) {
  std::ifstream in(journal);
  std::size_t n = 0;
  for (std::string l; std::getline(in, l);) n += l.find("\"type\":\"eval\"") != std::string::npos;
  return n;
}

// Every file or folder under `dir` whose name starts with `prefix`.
std::vector<fs::path> named(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> found;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path());
  return found;
}

}  // namespace

TEST(ResumeCommand, PrintedCommandIsQuotedForTheShellAndRunsThisBinary) {
  if (!moe::family("router").backend(moe::Backend::cpu)) GTEST_SKIP() << "the router family has no cpu backend in this build";
  const fs::path d = moe::testing::fresh_temp_dir("resume-quoting");
  const fs::path cwd = d / "cwd";
  fs::create_directories(cwd);
  // Each of these once ran, or split the path, when the command was pasted into a shell.
  const std::string name = "x'$(touch PWNED1)'y \"`touch PWNED2`\" $(touch PWNED3) a\nb; touch PWNED4 \\ $HOME";
  const fs::path out = d / name;
  const std::vector<std::string> argv = {
      MOEBENCH_EXE, "sweep", "router", "--model", "qwen3-30b-a3b", "--tokens", "1,2,4,8,16,32,64,128,256,512,1024",
      "--out", out.string(), "--tables", "none", "--backend", "cpu", "--threads", "2", "--json",
      "--min-time", "1ms", "--max-time", "50ms"};
  const pid_t pid = spawn(argv, cwd, d / "stdout", d / "stderr");
  const auto t0 = std::chrono::steady_clock::now();
  while (evals(out / "journal.jsonl") < 3 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGINT);
  ASSERT_EQ(wait_status(pid), 130) << slurp(d / "stderr") << "\n(finished before the interrupt? make the sweep longer)";

  const std::string err = slurp(d / "stderr");
  const std::string intro = "interrupted: resume with: ";
  const auto at = err.rfind(intro);
  ASSERT_NE(at, std::string::npos) << err;
  ASSERT_EQ(err.back(), '\n') << err;
  const std::string hint = err.substr(at + intro.size(), err.size() - at - intro.size() - 1);
  // The --json done event carries the same command.
  json done;
  std::istringstream lines(slurp(d / "stdout"));
  for (std::string l; std::getline(lines, l);) done = json::parse(l);
  ASSERT_EQ(done.value("event", ""), "done") << done.dump();
  EXPECT_EQ(done.value("resume", ""), hint);
  // The binary by its real path, so the command runs wherever PATH points.
  const std::string exe = fs::canonical(MOEBENCH_EXE).string();
  EXPECT_EQ(hint.rfind(exe + " sweep router ", 0), 0u) << hint;
  EXPECT_NE(hint.find("--resume"), std::string::npos) << hint;

  // Pasted into sh: it resumes that very folder and runs nothing else.
  const pid_t again = spawn({"/bin/sh", "-c", hint}, cwd, d / "stdout2", d / "stderr2");
  EXPECT_EQ(wait_status(again), 0) << slurp(d / "stderr2");
  EXPECT_TRUE(named(d, "PWNED").empty()) << "the printed command ran a command of the folder's name";
  EXPECT_TRUE(fs::exists(out / "results.json"));
  EXPECT_EQ(moe::tuner::read_results(out.string())["points"].size(), 11u);
  // No other folder was swept into.
  std::vector<std::string> entries;
  for (auto& e : fs::directory_iterator(d)) entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"cwd", "stderr", "stderr2", "stdout", "stdout2", name}));
  EXPECT_TRUE(fs::is_empty(cwd));
  fs::remove_all(d);
}
