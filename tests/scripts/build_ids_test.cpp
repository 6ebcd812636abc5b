// cmake/build_ids.cmake: a family's build id follows its code, not its comments or layout, so
// a comment edit keeps every tuned table while a code edit retires only that family's (and
// the layer's, whose configs name the stages').
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {

using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;

std::string ids(const fs::path& src, const fs::path& out) {
  const auto r = sh("cmake -DSRC=" + quote(src) + " -DOUT=" + quote(out) + " -DTOOLCHAIN=nvcc-x -P " +
                    quote(fs::path(MOEBENCH_SOURCE_DIR) / "cmake/build_ids.cmake"));
  EXPECT_EQ(r.code, 0) << r.out;
  return slurp(out);
}

std::string id_line(const std::string& all, const std::string& family) {
  const auto at = all.find("{\"" + family + "\"");
  return at == std::string::npos ? "" : all.substr(at, all.find('\n', at) - at);
}

TEST(BuildIds, CommentsAndLayoutKeepTheIdCodeChangesIt) {
  const fs::path d = fs::temp_directory_path() / ("moebench-ids-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "src");
  fs::copy(fs::path(MOEBENCH_SOURCE_DIR) / "kernels", d / "src/kernels", fs::copy_options::recursive);
  const std::string before = ids(d / "src", d / "a.inc");
  ASSERT_NE(id_line(before, "router"), "") << before;

  const fs::path file = d / "src/kernels/router/family.cpp";
  ASSERT_TRUE(fs::exists(file));
  const std::string code = slurp(file);
  std::ofstream(file) << "// a new first line of comment\n\n/* and a block\n   of two lines */\n" << code
                      << "\n   // and a trailing one\n\n";
  EXPECT_EQ(ids(d / "src", d / "b.inc"), before) << "a comment edit must keep every id";

  std::ofstream(file, std::ios::app) << "static int moebench_test_extra = 1;\n";
  const std::string after = ids(d / "src", d / "c.inc");
  EXPECT_NE(id_line(after, "router"), id_line(before, "router"));
  EXPECT_NE(id_line(after, "moe-layer"), id_line(before, "moe-layer"));
  for (const char* same : {"dispatch", "gmm", "combine"}) EXPECT_EQ(id_line(after, same), id_line(before, same)) << same;
  fs::remove_all(d);
}

}  // namespace
