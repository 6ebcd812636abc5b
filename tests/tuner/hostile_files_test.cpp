// Files moebench reads that someone else edited, truncated or generated: every reader refuses
// them with one moe::Error naming the file (exit 2), never a crash or another exception (exit 3),
// and a table it cannot read is never silently dropped.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/json_text.hpp"
#include "moe/error.hpp"
#include "moe/moe.hpp"
#include "runtime/table.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/base/units.hpp"
#include "tuner/measure/json_io.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/search/space_file.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/tables.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs `read`, which must throw a moe::Error whose message names `path` (and holds `also`).
template <class F>
void expect_refused(F read, const std::string& path, const std::string& also = "") {
  try {
    read();
    ADD_FAILURE() << path << " was accepted";
  } catch (const moe::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find(also), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

std::string header_line() {
  return json({{"type", "header"}, {"schema", kJournalSchema}, {"device", "cpu: test"}, {"backend", "cpu"}}).dump() + "\n";
}

std::string table_text(const std::string& entries) {
  return "{\"schema\": \"" + std::string(moe::runtime::kTableSchema) +
         "\", \"kernel\": \"scale\", \"entries\": " + entries + "}\n";
}

// One finished point of the scale family at `tokens`, as a sweep's results hold it.
json results_for(std::int64_t tokens) {
  const json chosen = {{"config", {{"tile", 4}}}, {"median_us", 1.5}};
  return {{"meta", {{"device_slug", "cpu"}, {"backend", "cpu"}}},
          {"records", json::array()},
          {"points", {{{"kernel", "scale"}, {"problem_key", "width=64"}, {"tokens", tokens}, {"chosen", chosen}}}}};
}

}  // namespace

TEST(HostileFiles, DeepNestingAndNulBytesAreRefusedBeforeParsing) {
  const std::string deep(100000, '[');
  EXPECT_NE(moe::io::json_text_problem(deep).find("deeper than"), std::string::npos);
  EXPECT_NE(moe::io::json_text_problem("{\"a\": 1}\n" + std::string(1, '\0')).find("NUL byte"), std::string::npos);
  // Brackets inside strings are text, not nesting.
  EXPECT_EQ(moe::io::json_text_problem("[\"" + std::string(500, '[') + "\\\"\"]"), "");
  EXPECT_EQ(moe::io::json_text_problem(std::string(moe::io::kMaxJsonDepth, '[') + std::string(moe::io::kMaxJsonDepth, ']')), "");

  const fs::path d = moe::testing::fresh_temp_dir("hostile-deep");
  const std::string f = (d / "deep.json").string();
  put(f, deep);
  expect_refused([&] { moe::runtime::load_table(f); }, f, "deeper than");
  expect_refused([&] { read_results(f); }, f, "deeper than");
  expect_refused([&] { read_space_file(f, {}, moe::Backend::cpu); }, f, "deeper than");
  expect_refused([&] { load_hf_config(f); }, f, "deeper than");
  expect_refused([&] { load_model(f); }, f, "deeper than");
  const std::string jf = (d / "journal.jsonl").string();
  put(jf, header_line() + deep + "\n" + header_line());
  expect_refused([&] { read_journal(jf); }, jf, "deeper than");
  // A trailing NUL after a valid document.
  put(f, "[{\"tile\": 16}]" + std::string(1, '\0'));
  expect_refused([&] { read_space_file(f, {}, moe::Backend::cpu); }, f, "NUL");
  fs::remove_all(d);
}

TEST(HostileFiles, JournalLinesOfTheWrongTypeNameTheFileAndLine) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-journal");
  const std::string f = (d / "journal.jsonl").string();
  for (const std::string& bad : {std::string("[]"), std::string("{\"type\": \"eval\", \"round\": \"0\"}"),
                                 std::string("{\"type\": 3}"), std::string("{\"type\": \"eval\", \"samples_us\": [\"x\"]}")}) {
    put(f, header_line() + bad + "\n" + header_line());
    expect_refused([&] { read_journal(f); }, f + " line 2", "not written by `moebench sweep`");
  }
  put(f, "[]\n");
  expect_refused([&] { read_journal(f); }, f + " line 1");
  fs::remove_all(d);
}

TEST(HostileFiles, TablesWithWrongTypesOrBadBytesAreErrorsNamingThem) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-table");
  const std::string f = (d / "t.json").string();
  for (const std::string& bad :
       {std::string("{\"schema\": 2, \"kernel\": \"scale\", \"entries\": {}}"), table_text("[]"),
        table_text("{\"1\": {\"config\": {\"tile\": 4}}, \"2\": {\"config\": \xff}}"),
        table_text("{\"abc\": {\"config\": {}}}"), table_text("{\"99999999999999999999\": {\"config\": {}}}"),
        table_text("{\" 12\": {\"config\": {}}}"), table_text("{\"12abc\": {\"config\": {}}}"),
        table_text("{\"-5\": {\"config\": {}}}")}) {
    put(f, bad);
    expect_refused([&] { moe::runtime::load_table(f); }, f);
  }
  EXPECT_EQ(moe::runtime::token_count_key("12"), 12);
  for (const char* k : {"", "0", "-5", " 12", "12abc", "abc", "99999999999999999999", "+3"})
    EXPECT_EQ(moe::runtime::token_count_key(k), -1) << k;
  fs::remove_all(d);
}

// Runtime dispatch passes a broken table over with its warning, as it does a table of another
// build: moe::Kernel never throws because of a file in the tables folder.
TEST(HostileFiles, RuntimeDispatchFallsBackOverABrokenTable) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-dispatch");
  moe::KernelOptions o;
  o.backend = moe::Backend::cpu;
  o.table_dirs = {d.string()};
  o.quiet = true;
  const moe::Params problem{{"experts", std::int64_t{16}}, {"topk", std::int64_t{2}}};
  const moe::Kernel clean("router", problem, o);
  const std::string path =
      moe::runtime::table_path(d.string(), "cpu", "router", moe::runtime::problem_key(clean.problem()));
  for (const std::string& bad : {std::string("{\"schema\": 2, \"kernel\": \"router\", \"entries\": {}}"),
                                 std::string("{\"schema\": \"") + moe::runtime::kTableSchema + "\", \"kernel\": \"rou\xff\"}",
                                 std::string("{\"schema\": ")}) {
    put(path, bad);
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(1 + bad.size()));  // the cache reloads
    EXPECT_NO_THROW({
      const moe::Kernel k("router", problem, o);
      EXPECT_EQ(k.config(16).str(), clean.config(16).str());
    }) << bad;
  }
  fs::remove_all(d);
}

TEST(HostileFiles, NullStatisticsReadAsNone) {
  const Stats s = stats_from_json({{"n", nullptr}, {"median_us", nullptr}, {"min_us", 2.0}});
  EXPECT_EQ(s.n, 0);
  EXPECT_EQ(s.median_us, 0.0);
  EXPECT_EQ(s.min_us, 2.0);
}

// A table that cannot be read is kept beside as NAME.corrupt-<time>, never silently replaced.
TEST(HostileFiles, CorruptExistingTableIsKeptAsideAndSaidSo) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-corrupt");
  const std::string path = moe::runtime::table_path(d.string(), "cpu", "scale", "width=64");
  for (const std::string& old :
       {table_text("{\"1\": {\"config\": {\"tile\": 4}}, \"4\": {\"config\": {\"tile\": 4}},}"),  // a typo
        table_text("{\"1\": {\"config\": {\"tile\": 4}}, \"abc\": {\"config\": {}}}"),
        table_text("{\"99999999999999999999\": {\"config\": {}}}"), table_text("{\"-5\": {\"config\": {}}}")}) {
    fs::remove_all(d);
    put(path, old);
    ::testing::internal::CaptureStderr();
    EXPECT_NO_THROW(write_tables(results_for(2), d.string())) << old;
    const std::string err = ::testing::internal::GetCapturedStderr();
    std::string kept;
    for (auto& e : fs::directory_iterator(fs::path(path).parent_path()))
      if (e.path().filename().string().find(".corrupt-") != std::string::npos) kept = e.path().string();
    ASSERT_FALSE(kept.empty()) << old;
    EXPECT_EQ(slurp(kept), old);
    EXPECT_NE(err.find("kept it as " + kept), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    const auto t = moe::runtime::load_table(path);
    ASSERT_EQ(t.entries.size(), 1u);
    EXPECT_EQ(t.entries.begin()->first, 2);
  }
  // A good table keeps its entries and nothing is set aside.
  fs::remove_all(d);
  write_tables(results_for(1), d.string());
  write_tables(results_for(4), d.string());
  EXPECT_EQ(moe::runtime::load_table(path).entries.size(), 2u);
  for (auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".corrupt-"), std::string::npos) << e.path();
  fs::remove_all(d);
}

TEST(HostileFiles, DirectoryOrFifoInATablesPlaceIsRefusedBeforeSweeping) {
  const fs::path d = moe::testing::fresh_temp_dir("hostile-place");
  const std::string path = moe::runtime::table_path(d.string(), "cpu", "scale", "width=64");
  fs::create_directories(path);
  expect_refused([&] { check_table_places(d.string(), "cpu", {{"scale", "width=64"}}); }, path, "is a directory");
  fs::remove_all(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expect_refused([&] { check_table_places(d.string(), "cpu", {{"scale", "width=64"}}); }, path, "FIFO");
  EXPECT_NO_THROW(check_table_places(d.string(), "cpu", {{"scale", "width=128"}}));
  fs::remove_all(d);
}

TEST(HostileFiles, DurationsArePlainDecimals) {
  EXPECT_EQ(parse_duration("16", "--watchdog"), 16);
  EXPECT_EQ(parse_duration("1.5s", "--watchdog"), 1.5);
  for (const char* bad : {"0x10", " 5", "0x1p4s", "5 ", "inf", "nan"})
    EXPECT_THROW(parse_duration(bad, "--watchdog"), moe::Error) << bad;
}
