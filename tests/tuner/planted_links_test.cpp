// Symlinks planted where moebench creates files: the temporaries of results, summaries, tables
// and merged journals, and the lock files of --out and of a tables folder. In a shared tables
// folder another user can plant them, so none may ever be followed: the file the link names
// keeps its bytes (or stays absent), and moebench writes its own files or refuses, saying why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moe/error.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/base/file_lock.hpp"
#include "tuner/base/temp_file.hpp"
#include "tuner/run/resume.hpp"
#include "tuner/store/merge.hpp"
#include "tuner/store/results.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;

namespace {

const std::string kVictimText = "someone else's file\n";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Links at the names a temporary of `target` once had (TARGET.tmp.PID, this process being the
// writer), each to a file of its own outside the folders moebench was given. Returns the victims.
std::vector<fs::path> plant_links(const fs::path& target, const fs::path& victims) {
  fs::create_directories(target.parent_path());
  fs::create_directories(victims);
  std::vector<fs::path> out;
  const std::string pid = std::to_string(::getpid());
  for (const std::string& suffix : std::vector<std::string>{pid, pid + ".0", "0"}) {
    const fs::path victim = victims / (target.filename().string() + "." + suffix);
    std::ofstream(victim) << kVictimText;
    fs::create_symlink(victim, target.string() + ".tmp." + suffix);
    out.push_back(victim);
  }
  return out;
}

void expect_untouched(const std::vector<fs::path>& victims) {
  for (auto& v : victims) EXPECT_EQ(slurp(v), kVictimText) << v << " was written through a planted link";
}

}  // namespace

// A sweep writes results.json, results.csv, summary.md and its table through temporaries
// whose names cannot be guessed, and never opens what it finds under a name it might use.
TEST(PlantedLinks, SweepOutputsAndTablesAreNeverWrittenThroughALink) {
  const fs::path d = moe::testing::fresh_temp_dir("planted-sweep");
  SweepOptions first = options(d / "first", scale_problem(64), {1, 2});
  first.tables_dir = (d / "tables").string();
  const SweepOutcome one = run_sweep(first);
  ASSERT_EQ(one.tables.size(), 1u);
  const fs::path table = one.tables.front();

  SweepOptions o = options(d / "out", scale_problem(64), {1, 2});
  o.tables_dir = first.tables_dir;
  std::vector<fs::path> victims;
  for (const char* f : {"results.json", "results.csv", "summary.md"})
    for (auto& v : plant_links(d / "out" / f, d / "victims")) victims.push_back(v);
  for (auto& v : plant_links(table, d / "victims")) victims.push_back(v);
  const SweepOutcome out = run_sweep(o);
  expect_untouched(victims);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(d / "out" / "results.json")));
  EXPECT_EQ(read_results((d / "out").string())["points"].size(), 2u);
  EXPECT_NE(slurp(d / "out" / "summary.md").find("# moebench sweep"), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(table)));
  EXPECT_NE(slurp(table).find("\"entries\""), std::string::npos);
  fs::remove_all(d);
}

// merge writes OUT/journal.jsonl (and results, csv, summary, tables) the same way.
TEST(PlantedLinks, MergeNeverWritesThroughALink) {
  const fs::path d = moe::testing::fresh_temp_dir("planted-merge");
  SweepOptions o = options(d / "shard", scale_problem(64), {1, 2});
  o.tables_dir.clear();
  const SweepOutcome s = run_sweep(o);
  std::vector<fs::path> victims;
  for (const char* f : {"journal.jsonl", "results.json", "results.csv", "summary.md"})
    for (auto& v : plant_links(d / "merged" / f, d / "victims")) victims.push_back(v);
  // The table merge writes: where the shard's own sweep would have put it.
  SweepOptions t = options(d / "probe", scale_problem(64), {1});
  t.tables_dir = (d / "probe-tables").string();
  const fs::path probe_table = run_sweep(t).tables.at(0);
  const fs::path table = d / "tables" / fs::relative(probe_table, d / "probe-tables");
  for (auto& v : plant_links(table, d / "victims")) victims.push_back(v);
  const MergeOutcome m = merge_sweeps({o.out_dir}, (d / "merged").string(), (d / "tables").string());
  expect_untouched(victims);
  EXPECT_EQ(read_journal((d / "merged" / "journal.jsonl").string()).lines.size(), read_journal(s.journal_path).lines.size());
  ASSERT_EQ(m.tables.size(), 1u);
  EXPECT_EQ(fs::path(m.tables[0]), table);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(table)));
  fs::remove_all(d);
}

// A lock file that is a symlink is refused, naming it; the file it names is neither created
// (a dangling link once made O_CREAT create it) nor opened.
TEST(PlantedLinks, ALockFileThatIsALinkIsRefused) {
  const fs::path d = moe::testing::fresh_temp_dir("planted-lock");
  fs::create_directories(d / "dir");
  const fs::path lock = d / "dir" / DirLock::kFileName;
  fs::create_symlink(d / "victim-absent", lock);
  std::string msg;
  try {
    DirLock l((d / "dir").string());
    ADD_FAILURE() << "locked through a dangling link";
  } catch (const moe::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
  EXPECT_NE(msg.find(lock.string()), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "victim-absent")));

  fs::remove(lock);
  std::ofstream(d / "victim") << kVictimText;
  fs::create_symlink(d / "victim", lock);
  EXPECT_THROW(DirLock((d / "dir").string(), LockWait::refuse), moe::Error);
  EXPECT_EQ(slurp(d / "victim"), kVictimText);

  // The tables folder's lock, planted before a sweep writes its table there: refused, exit 2's
  // error, the victim untouched; and so is the --out lock.
  SweepOptions first = options(d / "first", scale_problem(64), {1});
  first.tables_dir = (d / "tables").string();
  const fs::path table_dir = fs::path(run_sweep(first).tables.at(0)).parent_path();
  fs::remove(table_dir / DirLock::kFileName);
  fs::create_symlink(d / "victim-table-lock", table_dir / DirLock::kFileName);
  SweepOptions o = options(d / "out", scale_problem(64), {1});
  o.tables_dir = first.tables_dir;
  EXPECT_NE(refusal(o).find("symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "victim-table-lock")));

  fs::create_directories(d / "out2");
  fs::create_symlink(d / "victim-out-lock", d / "out2" / DirLock::kFileName);
  SweepOptions o2 = options(d / "out2", scale_problem(64), {1});
  o2.tables_dir.clear();
  EXPECT_NE(refusal(o2).find("symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "victim-out-lock")));
  fs::remove_all(d);
}

// The names: random, beside the target, each made afresh; a killed run's leftovers, of the old
// (PID) form or the new, are what --resume removes, and nothing else.
TEST(PlantedLinks, TemporaryNamesAreRandomAndRecognised) {
  const fs::path d = moe::testing::fresh_temp_dir("planted-names");
  const std::string target = (d / "results.json").string();
  const TempFile a = create_temp_beside(target), b = create_temp_beside(target);
  EXPECT_NE(a.path, b.path);
  EXPECT_EQ(fs::path(a.path).parent_path(), d);
  EXPECT_NE(a.path, target + ".tmp." + std::to_string(::getpid()));
  EXPECT_TRUE(is_temp_name_of(fs::path(a.path).filename().string(), "results.json"));
  ::close(a.fd);
  ::close(b.fd);
  EXPECT_TRUE(is_temp_name_of("results.json.tmp.12345", "results.json"));
  EXPECT_FALSE(is_temp_name_of("results.json.tmp.", "results.json"));
  EXPECT_FALSE(is_temp_name_of("results.json.tmp.a.b", "results.json"));
  EXPECT_FALSE(is_temp_name_of("other.json.tmp.abc", "results.json"));
  std::ofstream(d / "results.json.tmp.4242") << "x";
  std::ofstream(d / "keep.me") << "x";
  remove_stale_temp_files(d.string());
  for (auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "keep.me") << e.path();
  fs::remove_all(d);
}
