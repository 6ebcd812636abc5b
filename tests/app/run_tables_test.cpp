// `moebench run --tables DIR`: the config comes from DIR as runtime dispatch would pick it, and
// the output says which config ran and where it came from, stage by stage for the layer.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {

using moe::testing::quote;
using moe::testing::sh;

const std::string kShape = " --experts 8 --topk 2 --hidden 64 --intermediate 32 --align 4 --backend cpu --threads 2";
const std::string kFast = " --budget 2 --min-time 1ms --max-time 30ms --quiet";

moe::testing::Proc moebench(const std::string& args) { return sh("timeout -k 5 300 " + std::string(MOEBENCH_EXE) + " " + args); }

TEST(RunTables, LayerStagesSayWhichTableEntryRanOrThatNoneWasFound) {
  const fs::path d = fs::temp_directory_path() / ("moebench-run-tables-" + std::to_string(::getpid()));
  fs::remove_all(d);
  auto r = moebench("sweep moe-layer" + kShape + kFast + " --tokens 16 --out " + quote(d / "sweep") + " --tables " +
                    quote(d / "tables"));
  ASSERT_EQ(r.code, 0) << r.out;

  r = moebench("run moe-layer" + kShape + " --tokens 16 --repeat 1 --tables " + quote(d / "tables"));
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* stage : {"router", "dispatch", "gmm_up", "gmm_down", "combine"}) {
    const std::string line = std::string("stage    ") + stage + ": ";
    const auto at = r.out.find(line);
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string text = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(text.find("(exact entry 16 of " + (d / "tables").string() + "/cpu/"), std::string::npos) << text;
  }

  // Another folder, empty: every stage runs its default, and says so.
  r = moebench("run moe-layer" + kShape + " --tokens 16 --repeat 1 --tables " + quote(d / "empty"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("stage    gmm_up: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(default: no gmm table under " + (d / "empty").string()), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("exact entry"), std::string::npos) << r.out;

  // A single family: its table's entry instead of the family default.
  const std::string router = " --experts 8 --topk 2 --backend cpu --threads 2 --tokens 16";
  r = moebench("sweep router" + router + kFast + " --out " + quote(d / "router") + " --tables " + quote(d / "rt"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = moebench("run router" + router + " --repeat 1 --tables " + quote(d / "rt"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(exact entry 16 of " + (d / "rt").string() + "/cpu/router/"), std::string::npos) << r.out;
  r = moebench("run router" + router + " --repeat 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" (default)\n"), std::string::npos) << r.out;
  fs::remove_all(d);
}

}  // namespace
