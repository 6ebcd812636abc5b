// scripts/mutants.sh's list stays applicable: every mutation's text occurs exactly once in the
// tree (the trial itself rebuilds per mutation and is not part of the test run), and a list
// that no longer applies is refused with a message naming the mutation.
#include <gtest/gtest.h>

#include <fstream>

#include "support/shell.hpp"
#include "support/temp_dirs.hpp"

namespace {

const std::string kScript = std::string(MOEBENCH_SOURCE_DIR) + "/scripts/mutants.sh";

TEST(ScriptsMutants, EveryListedMutationAppliesToTheTree) {
  const auto r = moe::testing::sh(kScript + " --check");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("each applies to the tree exactly once"), std::string::npos) << r.out;
}

TEST(ScriptsMutants, RefusesAStaleListAndBadArguments) {
  const auto d = moe::testing::fresh_temp_dir("mutants-list");
  const auto list = d / "list.txt";
  std::ofstream(list) << "name = stale\nfile = README.md\nfrom = text the readme never had\nto = x\ntests = A.*\n";
  auto r = moe::testing::sh(kScript + " --check --list " + moe::testing::quote(list));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("mutation stale: its from text occurs 0 times in README.md"), std::string::npos) << r.out;
  std::ofstream(list) << "name = half\nfile = README.md\n";
  r = moe::testing::sh(kScript + " --check --list " + moe::testing::quote(list));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("mutation half lacks from, to, tests"), std::string::npos) << r.out;
  r = moe::testing::sh(kScript + " --frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown argument '--frobnicate'"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

}  // namespace
