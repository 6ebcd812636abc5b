#include "tuner/run/engine_worker.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "moe/error.hpp"

namespace moe::tuner {

namespace fs = std::filesystem;

std::string engine_python() {
  if (const char* given = std::getenv("MOEBENCH_PYTHON"); given && *given) {
    std::error_code ec;
    if (!fs::is_regular_file(given, ec))
      throw Error(std::string("MOEBENCH_PYTHON=") + given + " is not a file: point it at the Python interpreter whose "
                  "packages hold torch, triton and the engine");
    return fs::absolute(given).string();
  }
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / "python3";
    if (::access(p.c_str(), X_OK) == 0) return fs::absolute(p).string();
  }
  throw Error("no python3 on PATH for the engine's worker: install Python 3 or set MOEBENCH_PYTHON");
}

WorkerLaunch engine_launch(peers::Engine e, bool interpret) {
  WorkerLaunch l;
  l.argv = {engine_python(), "-m", "moebench.peers.worker", "--engine", std::string(peers::engine_name(e)), "--attached"};
  if (interpret) l.argv.push_back("--interpret");
  return l;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace

std::string check_engine(peers::Engine e, bool interpret) {
  std::string cmd = shell_quote(engine_python()) + " -m moebench.peers.worker --engine " +
                    std::string(peers::engine_name(e)) + " --check" + (interpret ? " --interpret" : "") + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw Error("cannot start " + engine_python() + " to check the " + std::string(peers::engine_name(e)) + " engine");
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int st = ::pclose(p);
  const std::string line = last_line(out);
  if (st != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    // The worker says what is missing on its last line; Python's own (no moebench package on
    // PYTHONPATH) ends in "ModuleNotFoundError: ...".
    if (line.rfind("moebench: error: ", 0) == 0) throw Error(line.substr(17));
    throw Error("--backend " + std::string(peers::engine_name(e)) + ": the engine's worker (" + engine_python() +
                " -m moebench.peers.worker) cannot start: " + (line.empty() ? std::string("no output") : line) +
                "; put moebench's python/ folder and the folder holding torch, triton and the engine on PYTHONPATH");
  }
  return line;
}

}  // namespace moe::tuner
