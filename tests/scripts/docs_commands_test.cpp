// Every moebench command line quoted in README.md and docs/ runs against the binary, so the
// pages cannot drift from it (a renamed flag, a changed default, a refusal the page calls a
// success). Each runs as written, with three changes that keep it quick on a CPU: --backend cpu
// for run and sweep (emu where the page asks for emu), a sweep is --dry-run (its plan is built,
// every problem of its axes made), and a run's shapes are small (hidden 256, intermediate 256
// per TP shard, at most 64 tokens). The files the commands read (a config.json, captured ids, a
// baseline, shards to merge) are made first, in a scratch folder that is their working directory.
// A run whose --config names the cuda kernels (kernel=wgmma) is a GPU example: it must be
// refused on the cpu naming that parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/shell.hpp"
#include "support/temp_dirs.hpp"

namespace fs = std::filesystem;
using moe::testing::Proc;
using moe::testing::quote;

namespace {

struct Quoted {
  std::string page, line;  // the page, and the command as the page writes it
};

// Lines of code blocks (fenced, or indented four spaces) that are a moebench command, with their
// continuation lines; "$ " prompts dropped; synopses ("[--tables DIR]") left out.
std::vector<Quoted> quoted_commands(const std::string& page, const std::string& markdown) {
  std::vector<Quoted> out;
  std::istringstream in(markdown);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  bool fenced = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced && lines[i].rfind("    ", 0) != 0) continue;
    std::string s = lines[i].substr(lines[i].find_first_not_of(' ') == std::string::npos ? 0 : lines[i].find_first_not_of(' '));
    if (s.rfind("$ ", 0) == 0) s = s.substr(2);
    if (s.rfind("moebench ", 0) != 0 && s != "moebench") continue;
    while (!s.empty() && s.back() == '\\' && i + 1 < lines.size()) {
      const std::string next = lines[++i];
      s.pop_back();
      while (!s.empty() && s.back() == ' ') s.pop_back();
      s = s + " " + next.substr(next.find_first_not_of(' ') == std::string::npos ? 0 : next.find_first_not_of(' '));
    }
    if (const auto hash = s.find(" #"); hash != std::string::npos) s = s.substr(0, hash);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    if (s.find('[') != std::string::npos) continue;  // a synopsis, not a command
    out.push_back({page, s});
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::string cur;
  bool dq = false;
  for (char c : s) {
    if (c == '"') dq = !dq;
    if (c == ' ' && !dq) {
      if (!cur.empty()) w.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) w.push_back(cur);
  return w;
}

bool has_flag(const std::vector<std::string>& w, const std::string& flag) {
  for (auto& x : w)
    if (x == flag || x.rfind(flag + "=", 0) == 0) return true;
  return false;
}

std::string value_of(const std::vector<std::string>& w, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < w.size(); ++i)
    if (w[i] == flag) return w[i + 1];
  return "";
}

// The command as the test runs it (see the top of the file), for `sh -c` in the scratch folder.
std::string runnable(const std::string& line) {
  std::string s = line;
  // The shell variables of the pages' loops, at their first value.
  for (auto [var, value] : std::vector<std::pair<std::string, std::string>>{
           {"$i", "0"}, {"$out", "results/dsv3/shard-0"}, {"$resume", ""}})
    for (std::size_t at; (at = s.find(var)) != std::string::npos;) s.replace(at, var.size(), value);
  // Absolute scratch paths stay inside the test's folder.
  for (std::size_t at; (at = s.find(" /tmp/")) != std::string::npos;) s.replace(at, 6, " tmp/");
  std::vector<std::string> w = words(s);
  const std::string cmd = w.size() > 1 ? w[1] : "";
  std::vector<std::string> extra;
  if (cmd == "run" || cmd == "sweep") {
    const std::string backend = value_of(w, "--backend");
    if (backend.empty()) extra.insert(extra.end(), {"--backend", "cpu"});
    for (std::size_t i = 1; i < w.size(); ++i)
      if (w[i - 1] == "--backend" && w[i] == "cuda") w[i] = "cpu";
  }
  if (cmd == "sweep" && !has_flag(w, "--dry-run")) extra.push_back("--dry-run");
  if (cmd == "run") {
    const std::string tp = value_of(w, "--tp");
    const std::string family = w.size() > 2 ? w[2] : "";
    const bool sized = family == "gmm" || family == "moe-layer";
    if ((sized || family == "dispatch" || family == "combine") && !has_flag(w, "--hidden"))
      extra.insert(extra.end(), {"--hidden", "256"});
    if (sized && !has_flag(w, "--intermediate"))
      extra.insert(extra.end(), {"--intermediate", std::to_string(256 * (tp.empty() ? 1 : std::stoi(tp)))});
    for (std::size_t i = 0; i + 1 < w.size(); ++i)
      if (w[i] == "--tokens" && std::stoll(w[i + 1]) > 64) w[i + 1] = "64";
    if (!has_flag(w, "--repeat")) extra.insert(extra.end(), {"--repeat", "1"});
  }
  std::string out = std::string(MOEBENCH_EXE);
  for (std::size_t i = 1; i < w.size(); ++i) out += " " + w[i];
  for (auto& x : extra) out += " " + x;
  return out;
}

void write_ids_npy(const fs::path& p, int rows, int k, int experts) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(k) + "), }";
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::ofstream f(p, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  f.put(static_cast<char>(len & 0xFF));
  f.put(static_cast<char>(len >> 8));
  f << header;
  std::mt19937 rng(34);
  for (int r = 0; r < rows; ++r) {
    std::vector<std::int32_t> ids;  // k distinct experts per token
    while (static_cast<int>(ids.size()) < k) {
      const std::int32_t e = static_cast<std::int32_t>(rng() % experts);
      if (std::find(ids.begin(), ids.end(), e) == ids.end()) ids.push_back(e);
    }
    f.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * sizeof(std::int32_t)));
  }
}

// The files the quoted commands name, made where they look for them.
void make_inputs(const fs::path& d) {
  const fs::path root = MOEBENCH_SOURCE_DIR;
  fs::copy_file(fs::path(MOEBENCH_TEST_DATA) / "hf" / "qwen3-30b-a3b.json", d / "config.json");
  write_ids_npy(d / "captured_ids.npy", 64, 8, 128);  // qwen3-30b-a3b and kimi-k2 both route to 8 of >= 128
  fs::create_directories(d / "results" / "baselines");
  fs::copy(root / "results" / "baselines" / "cpu", d / "results" / "baselines" / "cpu", fs::copy_options::recursive);
  // The sweeps the pages compare with the baseline: measured as it was, so nothing is SLOW.
  fs::create_directories(d / "sweeps" / "new");
  fs::copy_file(root / "results" / "baselines" / "cpu" / "results.json", d / "sweeps" / "new" / "results.json");
  fs::copy(root / "results" / "baselines" / "cpu", d / "perf-check", fs::copy_options::recursive);
  // A shard to merge: a real (tiny) sweep.
  const Proc shard = moe::testing::sh("cd " + quote(d) + " && " + std::string(MOEBENCH_EXE) +
                                      " sweep router --experts 8 --topk 2 --tokens 1 --backend cpu --threads 1 --budget 1"
                                      " --min-time 1ms --max-time 10ms --quiet --out results/dsv3/shard-0 --tables none");
  ASSERT_EQ(shard.code, 0) << shard.out;
}

std::vector<Quoted> every_quoted_command() {
  const fs::path root = MOEBENCH_SOURCE_DIR;
  std::vector<fs::path> pages{root / "README.md"};
  for (auto& e : fs::recursive_directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") pages.push_back(e.path());
  std::sort(pages.begin() + 1, pages.end());
  std::vector<Quoted> all;
  for (auto& p : pages) {
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    for (auto& q : quoted_commands(fs::relative(p, root).string(), text.str())) all.push_back(q);
  }
  return all;
}

}  // namespace

TEST(DocsCommands, EveryQuotedCommandLineRuns) {
  const fs::path d = moe::testing::fresh_temp_dir("docs-commands");
  make_inputs(d);
  const std::vector<Quoted> all = every_quoted_command();
  EXPECT_GT(all.size(), 30u) << "the extractor found too few commands to mean anything";
  for (const Quoted& q : all) {
    const std::string cmd = runnable(q.line);
    // Tables the commands write stay in the scratch folder; none of the user's are read.
    const Proc r = moe::testing::sh("cd " + quote(d) + " && MOEBENCH_CONFIG_DIR=" + quote(d / "configs") +
                                    " timeout -k 5 120 " + cmd);
    // A config of the cuda backend's own kernels (kernel=wgmma) is a GPU example: on the cpu it
    // must be refused cleanly, naming the parameter, and nothing else may go wrong with it.
    if (q.line.find("--config kernel=") != std::string::npos) {
      EXPECT_EQ(r.code, 2) << q.page << ": `" << q.line << "`:\n" << r.out.substr(0, 3000);
      EXPECT_NE(r.out.find("cpu config has no parameter 'kernel'"), std::string::npos) << q.line << ":\n" << r.out.substr(0, 3000);
      continue;
    }
    EXPECT_EQ(r.code, 0) << q.page << " quotes `" << q.line << "`; run as `" << cmd << "` it exits " << r.code
                         << ":\n" << r.out.substr(0, 3000);
  }
  fs::remove_all(d);
}

TEST(DocsCommands, TheExtractorTakesCommandsOfCodeBlocksOnly) {
  const auto q = quoted_commands("p.md",
                                 "run `moebench list` in prose\n"
                                 "    moebench run router --tokens 1   # a comment\n"
                                 "    $ moebench sweep gmm \\\n"
                                 "        --tokens 1,2\n"
                                 "    moebench merge SHARD_DIR... --out DIR [--tables DIR|none]\n"
                                 "```\nmoebench devices\n```\n"
                                 "    scripts/quickstart.sh\n");
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].line, "moebench run router --tokens 1");
  EXPECT_EQ(q[1].line, "moebench sweep gmm --tokens 1,2");
  EXPECT_EQ(q[2].line, "moebench devices");
  const std::string r = runnable("moebench run gmm --model qwen3-30b-a3b --tp 4 --tokens 8192 --backend cuda");
  EXPECT_NE(r.find(" --tokens 64 "), std::string::npos) << r;
  EXPECT_NE(r.find("--backend cpu"), std::string::npos) << r;
  EXPECT_NE(r.find("--intermediate 1024"), std::string::npos) << r;
  EXPECT_NE(runnable("moebench sweep all --out /tmp/x").find(" --out tmp/x --backend cpu --dry-run"), std::string::npos);
}
