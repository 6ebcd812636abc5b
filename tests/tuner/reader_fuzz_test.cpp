// Seeded fuzzing of every reader of user files and flag values: a few thousand malformed
// journals, results, config tables, --space files, Hugging Face configs, .npy files and flag
// texts, run in-process through the reader and what consumes its result. Each must be read or
// refused with a moe::Error (exit 2); any other exception would be an "internal error" (exit 3),
// and a crash ends the test binary. A smaller corpus goes through the binary in
// tests/app/hostile_cli_test.cpp's fuzz test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "io/npy.hpp"
#include "moe/error.hpp"
#include "runtime/table.hpp"
#include "support/fuzz_mutation.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/base/units.hpp"
#include "tuner/measure/timer_sizing.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/run/progress.hpp"
#include "tuner/search/space_file.hpp"
#include "tuner/store/compare.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/tables.hpp"

using namespace moe::tuner;
namespace fs = std::filesystem;

namespace {

constexpr unsigned kSeed = 21;
constexpr int kCasesPerReader = 450;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A small but complete journal of the scale family: header, prep, evals, point.
JournalContents seed_journal() {
  JournalContents j;
  j.header = {{"type", "header"}, {"schema", kJournalSchema}, {"device", "cpu: fuzz"}, {"backend", "cpu"},
              {"binary", "b"}, {"fingerprint", "f"}, {"settings", {{"rule", {{"max_noise", 0.01}}}}},
              {"shard", {{"index", 0}, {"count", 1}}}};
  for (int t : {1, 8}) {
    const std::string point = "scale/tokens=" + std::to_string(t);
    j.lines.push_back({{"type", "prep"}, {"point", point}, {"bytes", 1e6}, {"flops", 1e6}, {"prepare_s", 0.1}});
    for (int c = 0; c < 2; ++c)
      j.lines.push_back({{"type", "eval"}, {"point", point}, {"point_index", t}, {"kernel", "scale"},
                         {"problem", {{"width", 64}, {"tokens", t}}}, {"problem_key", "width=64"}, {"tokens", t},
                         {"cand_index", c}, {"config", {{"tile", 4 << c}}}, {"config_key", "tile=" + std::to_string(4 << c)},
                         {"is_default", c == 0}, {"round", 0}, {"status", "ok"}, {"validation", {{"ok", true}}},
                         {"samples_us", {1.0 + c, 1.1 + c, 0.9 + c}}, {"timer", "steady_clock"}});
    j.lines.push_back({{"type", "point"}, {"point", point}, {"point_index", t}, {"kernel", "scale"},
                       {"problem_key", "width=64"}, {"tokens", t}, {"evaluated", 2}, {"total", 2},
                       {"winner", "tile=4"}, {"runner_up", "tile=8"}, {"default", "tile=4"}});
  }
  return j;
}

json seed_meta() { return {{"device", "cpu: fuzz"}, {"device_slug", "cpu"}, {"backend", "cpu"}}; }

std::string journal_text(const JournalContents& j) {
  std::string t = j.header.dump() + "\n";
  for (auto& l : j.lines) t += l.dump() + "\n";
  return t;
}

struct Reader {
  std::string name, seed;
  std::function<void(const std::string& path)> read;
};

}  // namespace

TEST(ReaderFuzz, MalformedFilesAreReadOrRefusedWithAnError) {
  const fs::path d = moe::testing::fresh_temp_dir("reader-fuzz");
  const JournalContents jc = seed_journal();
  const json results = build_results(jc, seed_meta());
  const fs::path tables = d / "tables";
  write_tables(results, tables.string());
  const std::string table_path = moe::runtime::table_path(tables.string(), "cpu", "scale", "width=64");
  moe::Tensor t(moe::DType::f32, {3, 4});
  for (int i = 0; i < 12; ++i) t.set(i, 0.5 * i - 2);
  moe::write_npy((d / "seed.npy").string(), t);

  const std::vector<Reader> readers = {
      {"journal", journal_text(jc),
       [&](const std::string& p) {
         const JournalContents got = read_journal(p);
         const json r = build_results(got, seed_meta());
         markdown_summary(r);
         check_resumable(got.header, jc.header, p);
       }},
      {"results", results.dump(1),
       [&](const std::string& p) {
         const json r = read_results(p);
         compare_markdown(compare_results(r, results, 0.05), 0.05);
         results_csv(r);
         printed_summary(r);
       }},
      {"table", slurp(table_path),
       [&](const std::string& p) {
         moe::runtime::load_table(p);
         // The same text in a table's place, merged with a new sweep's entries.
         fs::copy_file(p, table_path, fs::copy_options::overwrite_existing);
         write_tables(results, tables.string());
       }},
      {"space", R"({"router": [{}], "gmm": [{}], "dispatch": []})",
       [&](const std::string& p) { read_space_file(p, moe::families(), moe::Backend::cpu); }},
      {"hf-config", slurp(std::string(MOEBENCH_TEST_DATA) + "/hf/deepseek-v3.json"),
       [&](const std::string& p) {
         load_hf_config(p);
         load_model(p);
       }},
      {"npy", slurp(d / "seed.npy"), [&](const std::string& p) { moe::read_npy(p); }},
  };
  std::mt19937 rng(kSeed);
  int cases = 0, refused = 0;
  std::vector<std::string> failures;
  const std::string path = (d / "input").string();
  for (const Reader& r : readers) {
    for (int i = 0; i < kCasesPerReader; ++i) {
      std::string text = r.seed;
      const int changes = 1 + static_cast<int>(rng() % 3);
      for (int c = 0; c < changes; ++c) moe::testing::mutate(text, rng);
      std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
      ++cases;
      ::testing::internal::CaptureStderr();  // the warnings of tables set aside
      try {
        r.read(path);
      } catch (const moe::Error& e) {
        ++refused;
        if (std::string(e.what()).find('\n') != std::string::npos) failures.push_back(r.name + ": two lines: " + e.what());
      } catch (const std::exception& e) {
        failures.push_back(r.name + " case " + std::to_string(i) + ": " + e.what() + "\n  input: " + text.substr(0, 200));
      }
      ::testing::internal::GetCapturedStderr();
    }
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << cases << " cases (seed " << kSeed
                                << ") ended in an exception that is not moe::Error:\n"
                                << [&] {
                                     std::string first;
                                     for (std::size_t i = 0; i < failures.size() && i < 5; ++i) first += failures[i] + "\n";
                                     return first;
                                   }();
  EXPECT_GT(refused, cases / 4);  // the mutations do reach the checks
  fs::remove_all(d);
}

TEST(ReaderFuzz, MalformedFlagValuesAreReadOrRefusedWithAnError) {
  std::mt19937 rng(kSeed);
  const std::vector<std::string> seeds = {"250ms", "5%", "0.05", "10m", "40", "1/4", "cold", "plain", "1.5s", "3/3"};
  const std::vector<std::function<void(const std::string&)>> parsers = {
      [](const std::string& s) { parse_duration(s, "--max-time"); },
      [](const std::string& s) { parse_fraction(s, "--max-noise"); },
      [](const std::string& s) { parse_budget(s); },
      [](const std::string& s) { parse_shard(s); },
      [](const std::string& s) { parse_timer_mode(s); },
      [](const std::string& s) { parse_progress_mode(s); },
  };
  std::vector<std::string> failures;
  for (int i = 0; i < 1500; ++i) {
    std::string text = seeds[rng() % seeds.size()];
    for (int c = 1 + static_cast<int>(rng() % 3); c > 0; --c) moe::testing::mutate(text, rng);
    for (auto& parse : parsers) {
      try {
        parse(text);
      } catch (const moe::Error&) {
      } catch (const std::exception& e) {
        failures.push_back("'" + text + "': " + e.what());
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << failures.size() << " flag values (seed " << kSeed << ") escaped, e.g. "
                                << (failures.empty() ? "" : failures.front());
}
