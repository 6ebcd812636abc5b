#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "support/temp_dirs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "runtime/lookup.hpp"
#include "tuner_scale_family.hpp"

using namespace moe;
using namespace moe::runtime;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir(name); }

Params problem(std::int64_t tokens) {
  return complete(moe::testing::scale_family().problem_params, Params{{"width", std::int64_t{64}}, {"tokens", tokens}}, "scale");
}

// A table with entries at 16 (tile 4) and 64 (tile 64, runner-up tile 16).
std::string write_table(const fs::path& dir, const std::string& extra_entry = "") {
  const std::string path = table_path(dir.string(), "cpu", "scale", problem_key(problem(1)));
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << R"({"schema": "moebench/config-table@1", "kernel": "scale", "backend": "cpu", "device": "cpu",
    "entries": {"16": {"config": {"tile": 4, "behave": "normal"}, "median_us": 1.5},
                "64": {"config": {"tile": 64, "behave": "normal"}, "median_us": 4.0,
                       "runner_up": {"config": {"tile": 16, "behave": "normal"}, "median_us": 4.2}})"
                      << extra_entry << "}}";
  return path;
}

Choice choose(std::int64_t tokens, const fs::path& dir, bool quiet = true) {
  return choose_config(moe::testing::scale_family(), Backend::cpu, problem(tokens), cpu_device_info(1), {dir.string()}, quiet);
}

}  // namespace

TEST(TunerLookup, NearestKeyInLog2WithTiesToTheSmaller) {
  const std::vector<std::int64_t> keys = {1, 16, 64, 4096};
  EXPECT_EQ(nearest_key(keys, 16), 16);   // exact
  EXPECT_EQ(nearest_key(keys, 32), 16);   // 32/16 == 64/32: tie goes to the smaller
  EXPECT_EQ(nearest_key(keys, 33), 64);   // just past the geometric middle
  EXPECT_EQ(nearest_key(keys, 31), 16);
  EXPECT_EQ(nearest_key(keys, 4), 1);     // 4/1 == 16/4: tie, smaller
  EXPECT_EQ(nearest_key(keys, 5), 16);
  EXPECT_EQ(nearest_key(keys, 512), 64);  // 512/64 = 8 == 4096/512: tie, smaller
  EXPECT_EQ(nearest_key(keys, 513), 4096);
  EXPECT_EQ(nearest_key(keys, 1 << 20), 4096);  // beyond the largest
  EXPECT_EQ(nearest_key({8}, 1), 8);            // below the smallest
  EXPECT_EQ(nearest_key({}, 7), -1);
  EXPECT_EQ(nearest_key({3, 1 << 30}, (std::int64_t{1} << 30) - 1), 1 << 30);  // no overflow
}

// moe::Kernel asks for the nearest key once per entry of its table, and `moebench lookup` once
// per token count: each answer reads O(log n) keys, so binding a table of n entries is
// O(n log n). The bound is on keys read, not on time.
TEST(TunerLookup, NearestKeyReadsLogarithmicallyManyKeys) {
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 1'000'000; ++i) keys.push_back(3 * i + 1);
  std::mt19937_64 g(11);
  std::uniform_int_distribution<std::int64_t> any(1, 3'000'100);
  for (int trial = 0; trial < 200; ++trial) {
    const std::int64_t t = trial < 100 ? keys[static_cast<std::size_t>(any(g) % 1'000'000)] : any(g);
    std::size_t reads = 0;
    const std::size_t i = nearest_index(keys, t, &reads);
    EXPECT_LE(reads, 22u) << t;  // ceil(log2(1e6)) = 20 halvings, then the two neighbours
    EXPECT_EQ(keys[i], nearest_key(keys, t));
    // The same rule as a scan of the neighbours would give.
    const auto hi = std::lower_bound(keys.begin(), keys.end(), t);
    if (hi != keys.end() && *hi == t) EXPECT_EQ(keys[i], t);
  }
}

TEST(TunerLookup, ExactNearestAndDefault) {
  const fs::path d = temp_dir("lookup");
  const std::string path = write_table(d);
  Choice c = choose(64, d);
  EXPECT_EQ(c.how, Match::exact);
  EXPECT_EQ(c.table, path);
  EXPECT_EQ(c.config.i("tile"), 64);
  EXPECT_TRUE(c.entry.has_runner_up);
  EXPECT_EQ(c.entry.runner_up.i("tile"), 16);
  EXPECT_TRUE(c.warning.empty());

  c = choose(32, d);  // tie between 16 and 64
  EXPECT_EQ(c.how, Match::nearest);
  EXPECT_EQ(c.key, 16);
  EXPECT_EQ(c.config.i("tile"), 4);
  EXPECT_NE(c.reason.find("ties go to the smaller"), std::string::npos);

  c = choose(100000, d);
  EXPECT_EQ(c.how, Match::nearest);
  EXPECT_EQ(c.key, 64);

  const fs::path empty = temp_dir("lookup-empty");
  c = choose(64, empty);
  EXPECT_EQ(c.how, Match::fallback);
  EXPECT_EQ(c.config.i("tile"), 16);  // the family's default
  EXPECT_EQ(c.config.s("behave"), "normal");
  EXPECT_NE(c.warning.find(table_path(empty.string(), "cpu", "scale", problem_key(problem(1)))), std::string::npos)
      << c.warning;
  EXPECT_NE(c.warning.find("does not exist"), std::string::npos);
  // The command names only what differs from the defaults (here nothing), so it stays readable.
  EXPECT_NE(c.warning.find("Tune it with: moebench sweep scale --backend cpu --tables " + empty.string()), std::string::npos)
      << c.warning;
  Params wide = problem(1);
  wide.set("width", std::int64_t{256});
  EXPECT_EQ(sweep_command(moe::testing::scale_family(), moe::Backend::cpu, wide, "t"),
            "moebench sweep scale --width 256 --backend cpu --tables t");
  fs::remove_all(d);
  fs::remove_all(empty);
}

// A table copied or renamed to another problem's path must not configure that problem.
TEST(TunerLookup, ATableContradictingItsPathIsPassedOver) {
  const fs::path d = temp_dir("lookup-contradict");
  const std::string path = write_table(d);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const fs::path good = temp_dir("lookup-contradict-later");
  write_table(good);
  for (const std::string& lie : {std::string(R"("kernel": "router")"),
                                 std::string(R"("kernel": "scale", "problem_key": "width=128")")}) {
    std::ofstream(path) << std::regex_replace(text, std::regex(R"("kernel": "scale")"), lie);
    const Choice c = choose(64, d);
    EXPECT_EQ(c.how, Match::fallback) << lie;
    EXPECT_EQ(c.config.i("tile"), 16) << "the family's default, not the table's entry";
    EXPECT_NE(c.warning.find("not what its path names"), std::string::npos) << c.warning;
    // A later folder's good table is used instead.
    const Choice later = choose_config(moe::testing::scale_family(), Backend::cpu, problem(64), cpu_device_info(1),
                                       {d.string(), good.string()}, true);
    EXPECT_EQ(later.how, Match::exact) << lie;
    EXPECT_EQ(later.config.i("tile"), 64);
  }
  std::ofstream(path) << text;  // restored: used again
  EXPECT_EQ(choose(64, d).how, Match::exact);
  fs::remove_all(good);
  fs::remove_all(d);
}

// Where `moebench sweep` writes by default (./configs) is where lookup looks first.
TEST(TunerLookup, DefaultDirectoriesFollowTheSweepsDefault) {
  const fs::path d = temp_dir("lookup-default-dirs");
  const fs::path cwd = fs::current_path();
  const char* env = std::getenv("MOEBENCH_CONFIG_DIR");
  const std::string saved = env ? env : "";
  ::unsetenv("MOEBENCH_CONFIG_DIR");
  fs::current_path(d);
  const std::vector<std::string> none = default_table_dirs();
  ASSERT_EQ(none.size(), 1u);  // the shipped tables alone
  EXPECT_NE(none[0], "configs");
  fs::create_directories(d / "configs");
  const std::vector<std::string> with = default_table_dirs();
  ASSERT_EQ(with.size(), 2u);
  EXPECT_EQ(with[0], "configs");
  EXPECT_EQ(with[1], none[0]);
  write_table(d / "configs");
  EXPECT_EQ(choose_config(moe::testing::scale_family(), Backend::cpu, problem(64), cpu_device_info(1),
                          default_table_dirs(), true)
                .how,
            Match::exact);
  ::setenv("MOEBENCH_CONFIG_DIR", "/x/a:/x/b", 1);
  EXPECT_EQ(default_table_dirs(), (std::vector<std::string>{"/x/a", "/x/b"}));
  fs::current_path(cwd);
  if (env) ::setenv("MOEBENCH_CONFIG_DIR", saved.c_str(), 1);
  else ::unsetenv("MOEBENCH_CONFIG_DIR");
  fs::remove_all(d);
}

TEST(TunerLookup, WarnsOncePerMissingTable) {
  const fs::path d = temp_dir("lookup-warn");
  ::testing::internal::CaptureStderr();
  choose(8, d, false);
  choose(8, d, false);
  choose(16, d, false);
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::size_t n = 0;
  for (std::size_t p = err.find("moebench: warning"); p != std::string::npos; p = err.find("moebench: warning", p + 1)) ++n;
  EXPECT_EQ(n, 1u) << err;
  fs::remove_all(d);
}

TEST(TunerLookup, BadEntriesAndBrokenTablesFallBackToTheDefault) {
  const fs::path d = temp_dir("lookup-bad");
  // tile 1024 is more than 4x the width 64: not valid for this problem any more.
  write_table(d, R"(, "2048": {"config": {"tile": 1024, "behave": "normal"}, "median_us": 9})");
  Choice c = choose(2048, d);
  EXPECT_EQ(c.how, Match::fallback);
  EXPECT_NE(c.warning.find("not valid in this build"), std::string::npos) << c.warning;
  EXPECT_EQ(c.config.i("tile"), 16);
  // A table that is not JSON: the default, with a warning naming the file.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string path = write_table(d);
  std::ofstream(path) << "{ not json";
  c = choose(64, d);
  EXPECT_EQ(c.how, Match::fallback);
  EXPECT_NE(c.warning.find(path), std::string::npos) << c.warning;
  EXPECT_THROW(load_table(path), Error);
  fs::remove_all(d);
}

TEST(TunerLookup, ReloadsAChangedTable) {
  const fs::path d = temp_dir("lookup-reload");
  const std::string path = write_table(d);
  EXPECT_EQ(choose(16, d).config.i("tile"), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(path) << R"({"schema": "moebench/config-table@1", "kernel": "scale",
    "entries": {"16": {"config": {"tile": 256, "behave": "normal"}, "median_us": 1.0}}})";
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(1));
  EXPECT_EQ(choose(16, d).config.i("tile"), 256);
  fs::remove_all(d);
}

TEST(TunerLookup, Names) {
  DeviceInfo g;
  g.backend = Backend::cuda;
  g.name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(device_slug(g), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(device_slug(cpu_device_info(1)), "cpu");
  EXPECT_EQ(slugify("  --  "), "unknown");
  EXPECT_EQ(problem_key(Params{{"tokens", std::int64_t{4}}, {"experts", std::int64_t{8}}, {"dtype", std::string("bf16")}}),
            "dtype=bf16,experts=8");
  EXPECT_EQ(table_path("configs", "cpu", "router", "a=1"), "configs/cpu/router/a=1.json");
}
