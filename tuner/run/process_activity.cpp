#include "tuner/run/process_activity.hpp"

#include <dirent.h>

#include <sstream>
#include <string>
#include <vector>

#include "io/read_file.hpp"

namespace moe::tuner {

namespace {

// The fields of a /proc stat file after "pid (comm)", the state first; empty when unreadable.
// comm may hold spaces and parentheses: it ends at the last ')'.
std::vector<std::string> stat_fields(const std::string& path) {
  const std::string text = read_proc_text(path);
  const auto close = text.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  return f;
}

}  // namespace

std::string read_proc_text(const std::string& path) {
  std::string text, why;
  return io::read_whole_file(path, text, why) ? text : std::string();
}

ProcessActivity process_activity(pid_t pid) {
  ProcessActivity a;
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::vector<std::string> f = stat_fields(dir + "/stat");
  // utime and stime are fields 14 and 15 of the file, 12 and 13 after the state (field 3).
  if (f.size() < 13) return a;
  try {
    a.cpu_ticks = std::stoll(f[11]) + std::stoll(f[12]);
  } catch (const std::exception&) {
    return a;
  }
  // The main thread's state alone would miss a pool thread at work while it waits.
  DIR* tasks = ::opendir((dir + "/task").c_str());
  if (!tasks) return a;
  bool busy = false;
  for (dirent* e; !busy && (e = ::readdir(tasks)) != nullptr;) {
    if (e->d_name[0] == '.') continue;
    const std::vector<std::string> t = stat_fields(dir + "/task/" + e->d_name + "/stat");
    busy = !t.empty() && t[0].find_first_of("RDZX") != std::string::npos;
  }
  ::closedir(tasks);
  a.busy = busy || f[0].find_first_of("RDZX") != std::string::npos;
  return a;
}

}  // namespace moe::tuner
