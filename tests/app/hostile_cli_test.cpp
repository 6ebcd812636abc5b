// Hostile inputs and faults met through the moebench binary: each is one `moebench: error:`
// line and exit 2 (or the documented 0/1/130), never a signal, an internal error or lost data.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "support/fuzz_mutation.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/base/file_lock.hpp"
#include "tuner/measure/json_io.hpp"

using moe::testing::quote;
using moe::testing::slurp;
using moe::tuner::json;
namespace fs = std::filesystem;

namespace {

moe::testing::Proc mb(const std::string& args) {
  return moe::testing::sh("timeout -k 5 300 " + std::string(MOEBENCH_EXE) + " " + args);
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expect_one_error_line(const moe::testing::Proc& r, const std::string& says) {
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("moebench: error: ", 0), 0u) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find(says), std::string::npos) << r.out;
}

// A version-1 .npy of `descr` and `shape` with `data` as its bytes.
void write_npy(const fs::path& p, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream out(p, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(h.size() & 0xff) << static_cast<char>(h.size() >> 8) << h
      << data;
}

std::string quick_sweep(const fs::path& out, const std::string& tables = "none") {
  return "sweep router --backend cpu --experts 16 --topk 2 --tokens 4 --budget 2 --quiet --out " + quote(out) +
         " --tables " + (tables == "none" ? tables : quote(tables));
}

// The config table a one-problem sweep wrote under `dir` (empty when there is none).
fs::path table_under(const fs::path& dir) {
  fs::path table;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".json") table = e.path();
  return table;
}

// Holds the lock a sweep takes on `dir` for as long as it lives (a POSIX lock of this process).
struct HeldLock {
  int fd;
  explicit HeldLock(const fs::path& dir) {
    fs::create_directories(dir);
    fd = ::open((dir / moe::tuner::DirLock::kFileName).c_str(), O_RDWR | O_CREAT, 0644);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    EXPECT_EQ(::fcntl(fd, F_SETLK, &fl), 0);
  }
  ~HeldLock() { ::close(fd); }
};

}  // namespace

TEST(HostileCli, ReplayWithZeroRowsIsRefusedNotAFloatingPointTrap) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-dist0");
  write_npy(d / "logits.npy", "<f4", "(0, 16)", "");
  expect_one_error_line(mb("run router --backend cpu --experts 16 --topk 2 --tokens 4 --dist " + quote(d / "logits.npy")),
                        "with N >= 1");
  expect_one_error_line(mb(quick_sweep(d / "s") + " --dist " + quote(d / "logits.npy")), "with N >= 1 rows");
  EXPECT_FALSE(fs::exists(d / "s" / "journal.jsonl"));
  fs::remove_all(d);
}

TEST(HostileCli, ReplayedIdsOutsideTheExpertsAreRefused) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-ids");
  std::string data;
  const std::int64_t far = (std::int64_t{1} << 32) + 3;
  for (int i = 0; i < 8; ++i) data.append(reinterpret_cast<const char*>(&far), sizeof far);
  write_npy(d / "ids.npy", "<i8", "(4, 2)", data);
  expect_one_error_line(mb("run gmm --backend cpu --experts 16 --topk 2 --tokens 4 --hidden 64 --intermediate 64 --dist " +
                           quote(d / "ids.npy")),
                        "expert id 4294967299, outside 0..15");
  fs::remove_all(d);
}

TEST(HostileCli, ThreadCountIsBoundedWithTheReason) {
  const auto r = mb("run router --backend cpu --tokens 4 --threads 2147483647");
  expect_one_error_line(r, "hardware threads here");
  EXPECT_EQ(mb("run router --backend cpu --tokens 4 --repeat 1 --threads 2").code, 0);
}

TEST(HostileCli, GarbageFlagValuesAreRefused) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-flags");
  expect_one_error_line(mb("run gmm --backend cpu --tokens 4 --hidden ''"), "--hidden ''");
  expect_one_error_line(mb("run router --backend cpu --tokens 4 --rsf ''"), "--rsf ''");
  expect_one_error_line(mb(quick_sweep(d / "a") + " --watchdog 0x10"), "--watchdog '0x10' is not a duration");
  expect_one_error_line(mb(quick_sweep(d / "b") + " --progress bogus"), "unknown progress mode 'bogus'");
  expect_one_error_line(mb(quick_sweep(d / "c") + " --shard 4294967296/4294967297"), "at most 65536 shards");
  EXPECT_FALSE(fs::exists(d / "a" / "journal.jsonl"));
  fs::remove_all(d);
}

TEST(HostileCli, SecondInputOfOneNameIsRefused) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-input2");
  std::string data;
  for (int i = 0; i < 4 * 16; ++i) {
    const float v = 0.25f * static_cast<float>((i * 7) % 13) - 1.0f;
    data.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  write_npy(d / "a.npy", "<f4", "(4, 16)", data);
  write_npy(d / "b.npy", "<f4", "(4, 16)", data);
  expect_one_error_line(mb("run router --backend cpu --dtype f32 --experts 16 --topk 2 --tokens 4 --input logits=" +
                           quote(d / "a.npy") + " --input logits=" + quote(d / "b.npy")),
                        "--input logits is given twice");
  fs::remove_all(d);
}

TEST(HostileCli, HfConfigFieldsOfTheWrongTypeAreRefusedAlone) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-hf");
  const std::string base = R"("model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 2,
      "hidden_size": 64, "moe_intermediate_size": 32, "n_group": 1, "topk_group": 1)";
  for (const auto& [field, says] : std::vector<std::pair<std::string, std::string>>{
           {R"("scoring_func": 5)", "field 'scoring_func' is 5, expected a string"},
           {R"("topk_method": ["noaux_tc"])", "field 'topk_method'"},
           {R"("torch_dtype": 16)", "field 'torch_dtype'"},
           {R"("routed_scaling_factor": 1e308)", "routed_scaling_factor 1e+308 is above 1000"}}) {
    std::ofstream(d / "config.json") << "{" << base << ", " << field << "}";
    expect_one_error_line(mb("run router --backend cpu --tokens 4 --hf-config " + quote(d / "config.json")), says);
  }
  // An error in a config that would also have warned comes alone.
  std::ofstream(d / "config.json") << R"({"model_type": "qwen2_moe", "num_experts": 16, "num_experts_per_tok": 32,
      "hidden_size": 64, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64})";
  const auto r = mb("run router --backend cpu --tokens 4 --hf-config " + quote(d / "config.json"));
  expect_one_error_line(r, "topk");
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(HostileCli, NonUtf8PathsDoNotLoseTheSweep) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-utf8");
  const fs::path tables = d / "tab\xff";
  const auto r = mb(quick_sweep(d / "out\xfe", tables.string()) + " --json");
  EXPECT_EQ(r.code, 0) << r.out;
  int written = 0;
  for (auto& e : fs::recursive_directory_iterator(tables)) written += e.path().extension() == ".json" ? 1 : 0;
  EXPECT_EQ(written, 1);
  EXPECT_TRUE(fs::exists(d / "out\xfe" / "results.json"));
  fs::remove_all(d);
}

TEST(HostileCli, EditedFilesAreInputErrorsNamingThem) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-edited");
  ASSERT_EQ(mb(quick_sweep(d / "s")).code, 0);
  // compare: a statistic written as null (as NaN is) reads as none.
  json res = json::parse(slurp(d / "s" / "results.json"));
  res["records"][0]["stats"]["n"] = nullptr;
  std::ofstream(d / "edited.json") << res.dump();
  auto r = mb("compare " + quote(d / "s" / "results.json") + " " + quote(d / "edited.json"));
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
  // merge and --resume: journal lines of the wrong type.
  const std::string journal = slurp(d / "s" / "journal.jsonl");
  fs::create_directories(d / "bad");
  std::ofstream(d / "bad" / "journal.jsonl") << journal.substr(0, journal.find('\n') + 1) << "[]\n" << journal.substr(journal.find('\n') + 1);
  expect_one_error_line(mb("merge " + quote(d / "bad") + " --out " + quote(d / "m")), "journal.jsonl line 2");
  fs::copy(d / "bad" / "journal.jsonl", d / "s" / "journal.jsonl", fs::copy_options::overwrite_existing);
  expect_one_error_line(mb(quick_sweep(d / "s") + " --resume"), "journal.jsonl line 2");
  // merge: a symlink loop for an input.
  fs::create_symlink(d / "loop", d / "loop");
  r = mb("merge " + quote(d / "loop") + " --out " + quote(d / "m2"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
  fs::remove_all(d);
}

TEST(HostileCli, TwoSweepsOnOneOutAreRefused) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-outlock");
  ASSERT_EQ(mb(quick_sweep(d / "s")).code, 0);
  const std::string before = slurp(d / "s" / "journal.jsonl");
  {
    HeldLock held(d / "s");  // as a running sweep holds it
    expect_one_error_line(mb(quick_sweep(d / "s") + " --resume"),
                          "is in use by process " + std::to_string(::getpid()));
  }
  EXPECT_EQ(slurp(d / "s" / "journal.jsonl"), before);
  EXPECT_EQ(mb(quick_sweep(d / "s") + " --resume").code, 0);
  fs::remove_all(d);
}

// A killed worker leaves its candidate crashed: --resume measures it again, once, and
// --no-retry keeps it; stale temporary files of a killed run are removed.
TEST(HostileCli, ResumeRetriesCrashedCandidatesOnceAndCleansTempFiles) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-retry");
  ASSERT_EQ(mb(quick_sweep(d / "s")).code, 0);
  std::string text = slurp(d / "s" / "journal.jsonl"), edited;
  std::string crashed_config;
  for (std::size_t b = 0; b < text.size();) {
    const std::size_t e = text.find('\n', b);
    json l = json::parse(text.substr(b, e - b));
    b = e + 1;
    if (l.value("type", "") == "eval" && crashed_config.empty()) {
      l["status"] = "crashed";
      l["error"] = "worker killed by signal 9";
      l.erase("samples_us");
      l.erase("validation");
      crashed_config = l.value("config_key", "");
    }
    edited += l.dump() + "\n";
  }
  ASSERT_FALSE(crashed_config.empty());
  const auto count_retries = [&] {
    int n = 0;
    const std::string t = slurp(d / "s" / "journal.jsonl");
    for (std::size_t p = 0; (p = t.find("\"retry\":true", p)) != std::string::npos; ++p) ++n;
    return n;
  };
  std::ofstream(d / "s" / "journal.jsonl") << edited;
  EXPECT_EQ(mb(quick_sweep(d / "s") + " --resume --no-retry").code, 0);
  EXPECT_EQ(count_retries(), 0);
  std::ofstream(d / "s" / "results.json.tmp.424242") << "{";
  EXPECT_EQ(mb(quick_sweep(d / "s") + " --resume").code, 0);
  EXPECT_EQ(count_retries(), 1);
  EXPECT_FALSE(fs::exists(d / "s" / "results.json.tmp.424242"));
  const json res = json::parse(slurp(d / "s" / "results.json"));
  for (auto& r : res["records"])
    if (r.value("config_key", "") == crashed_config) EXPECT_EQ(r.value("status", ""), "ok") << r.dump();
  EXPECT_EQ(mb(quick_sweep(d / "s") + " --resume").code, 0);
  EXPECT_EQ(count_retries(), 1);  // once
  fs::remove_all(d);
}

// A full --out (ENOSPC): the error names the file that could not be written, not its temporary,
// exit 2, and the finished points' tables are still written. The full disk is a 64 KiB tmpfs in a
// private mount namespace, filled up after the journal of a finished sweep is copied in, so the
// resumed sweep measures nothing and fails only at its final writes.
TEST(HostileCli, FullOutFolderNamesTheFileAndKeepsTheTables) {
  const fs::path d = moe::testing::fresh_temp_dir("enospc");
  if (moe::testing::sh("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs " + quote(d) + "'").code != 0)
    GTEST_SKIP() << "no private mount namespace here (unshare -m and mount need root)";
  const auto done = mb(quick_sweep(d / "first"));
  ASSERT_EQ(done.code, 0) << done.out;
  fs::create_directories(d / "full");
  std::ofstream(d / "full.sh") << "set -e\nmount -t tmpfs -o size=64k tmpfs " << quote(d / "full") << "\ncp "
                              << quote(d / "first" / "journal.jsonl") << " " << quote(d / "full") << "\ndd if=/dev/zero of="
                              << quote(d / "full" / "filler") << " bs=1k count=1000 2>/dev/null || true\nexec timeout -k 5 300 "
                              << MOEBENCH_EXE << " " << quick_sweep(d / "full", (d / "tables").string()) << " --resume\n";
  const auto r = moe::testing::sh("unshare -m sh " + quote(d / "full.sh"));
  expect_one_error_line(r, "No space left on device");
  EXPECT_NE(r.out.find("results.json"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(".tmp"), std::string::npos) << r.out;
  EXPECT_FALSE(table_under(d / "tables").empty()) << "the finished point's table was not written";
  fs::remove_all(d);
}

// A held table lock: the sweep says who holds it, and Ctrl-C stops the wait (exit 130) with the
// results written; a directory in a table's place is refused before sweeping.
TEST(HostileCli, HeldTableLockSaysWhoAndCtrlCStopsTheWait) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-tablelock");
  ASSERT_EQ(mb(quick_sweep(d / "first", (d / "t").string())).code, 0);
  const fs::path table = table_under(d / "t");
  ASSERT_FALSE(table.empty());
  {
    HeldLock held(table.parent_path());
    const fs::path err = d / "err.txt";
    const std::string cmd = "timeout -k 5 120 " + std::string(MOEBENCH_EXE) + " " + quick_sweep(d / "second", (d / "t").string()) + " 2> " +
                            quote(err) + " & pid=$!; for i in $(seq 600); do grep -q 'waiting for' " + quote(err) +
                            " && break; sleep 0.1; done; kill -INT $pid; wait $pid; echo rc=$?";
    const auto r = moe::testing::sh(cmd);
    EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out << slurp(err);
    const std::string said = slurp(err);
    EXPECT_NE(said.find("locked by process " + std::to_string(::getpid())), std::string::npos) << said;
    EXPECT_NE(said.find("stopped waiting for"), std::string::npos) << said;
    EXPECT_TRUE(fs::exists(d / "second" / "results.json"));
  }
  fs::remove(table);
  fs::create_directories(table);
  const auto r = mb(quick_sweep(d / "third", (d / "t").string()));
  expect_one_error_line(r, "cannot write config table " + table.string() + ": it is a directory");
  EXPECT_FALSE(fs::exists(d / "third" / "journal.jsonl"));
  fs::remove_all(d);
}

// Merged tables say the merge made them.
TEST(HostileCli, MergedTablesRecordTheMergeCommand) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-merge");
  for (const char* shard : {"0/2", "1/2"}) {
    const std::string name = std::string("s") + shard[0];
    const auto r = mb("sweep router --backend cpu --experts 16 --topk 2 --tokens 1,4 --budget 2 --quiet --tables none --shard " +
                      std::string(shard) + " --out " + quote(d / name));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const auto r = mb("merge " + quote(d / "s0") + " " + quote(d / "s1") + " --out " + quote(d / "m") + " --tables " +
                    quote(d / "t"));
  ASSERT_EQ(r.code, 0) << r.out;
  int tables = 0;
  for (auto& e : fs::recursive_directory_iterator(d / "t"))
    if (e.path().extension() == ".json") {
      ++tables;
      const json t = json::parse(slurp(e.path()));
      EXPECT_EQ(t["provenance"].value("command", "").rfind("moebench merge ", 0), 0u) << t["provenance"].dump();
    }
  EXPECT_EQ(tables, 1);
  fs::remove_all(d);
}

// The fuzz corpus through the binary (the in-process fuzz, tests/tuner/reader_fuzz_test.cpp,
// covers thousands of cases; spawning the binary is slower, so a few dozen here): every exit is
// 0, 1 or 2, never a signal or 3, and a refusal is one `moebench: error:` line.
TEST(HostileCli, FuzzCorpusThroughTheBinary) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-fuzz");
  ASSERT_EQ(mb(quick_sweep(d / "s", (d / "t").string())).code, 0);
  const fs::path table = table_under(d / "t");
  const std::string table_seed = slurp(table), results_seed = slurp(d / "s" / "results.json");
  const std::string journal_seed = slurp(d / "s" / "journal.jsonl");
  const std::string hf_seed = slurp(std::string(MOEBENCH_TEST_DATA) + "/hf/qwen3-30b-a3b.json");
  const fs::path f = d / "input.json";
  struct Case {
    std::string seed;
    std::function<std::string()> args;
  };
  const std::vector<Case> cases = {
      {results_seed, [&] { return "compare " + quote(d / "s" / "results.json") + " " + quote(f); }},
      {journal_seed, [&] { return "merge " + quote(f) + " --out " + quote(d / "m"); }},
      {hf_seed, [&] { return "run router --backend cpu --tokens 4 --repeat 1 --hf-config " + quote(f); }},
      {R"([{"block_t": 4}])", [&] { return quick_sweep(d / "sp") + " --space " + quote(f); }},
      {table_seed, [&] {
         fs::copy_file(f, table, fs::copy_options::overwrite_existing);
         return "lookup router --backend cpu --experts 16 --topk 2 --tokens 4 --json";
       }},
      {"250ms", [&] { return quick_sweep(d / "w") + " --watchdog '" + slurp(f) + "'"; }},
      {"1/2", [&] { return quick_sweep(d / "sh") + " --shard '" + slurp(f) + "'"; }},
  };
  std::mt19937 rng(21);
  for (int round = 0; round < 4; ++round)
    for (const Case& c : cases) {
      std::string text = c.seed;
      moe::testing::mutate(text, rng);
      if (c.seed.size() < 8) text.erase(std::remove_if(text.begin(), text.end(), [](char ch) { return ch == '\0' || ch == '\'' || ch == '\n'; }), text.end());
      std::ofstream(f, std::ios::binary | std::ios::trunc) << text;
      const std::string args = c.args();
      fs::remove_all(d / "sp");
      fs::remove_all(d / "w");
      fs::remove_all(d / "sh");
      fs::remove_all(d / "m");
      const auto r = moe::testing::sh("MOEBENCH_CONFIG_DIR=" + quote(d / "t") + " timeout -k 5 300 " + MOEBENCH_EXE + " " + args);
      EXPECT_TRUE(r.code == 0 || r.code == 1 || r.code == 2) << args << "\n" << r.out;
      EXPECT_EQ(r.out.find("internal error"), std::string::npos) << args << "\n" << r.out;
      if (r.code == 2) {
        int errors = 0;
        for (std::size_t p = 0; (p = r.out.find("moebench: error:", p)) != std::string::npos; ++p) ++errors;
        EXPECT_EQ(errors, 1) << args << "\n" << r.out;
      }
    }
  fs::remove_all(d);
}
