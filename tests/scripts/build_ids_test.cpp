// cmake/build_ids.cmake: a family's build id follows its code, not its comments or layout, so
// a comment edit keeps every tuned table while a code edit retires only that family's (and
// the layer's, whose configs name the stages'). Device code counts by its compiled SASS.
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

std::string ids(const fs::path& src, const fs::path& out, const std::string& objects = "") {
  std::string args;
  if (!objects.empty())
    args = " -DOBJECTS=" + quote(objects) + " -DCUOBJDUMP=" + quote(MOEBENCH_CUOBJDUMP) + " -DNVDISASM=" +
           quote(MOEBENCH_NVDISASM);
  const auto r = sh("cmake -DSRC=" + quote(src) + " -DOUT=" + quote(out) + args + " -DTOOLCHAIN=nvcc-x -P " +
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

// A kernel header (device code) in a family's folder `dir`, compiled as the build compiles the
// kernels (-lineinfo: a comment that moves lines changes the object, not the code).
void write_kernel(const fs::path& src, const std::string& head, const std::string& factor,
                  const std::string& dir = "kernels/router") {
  fs::create_directories(src / dir);
  std::ofstream(src / dir / "scale.cuh") << head << "__global__ void scale(float* x, int n) {\n"
                                         << "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                         << "  if (i < n) x[i] *= " << factor << ";\n}\n";
  std::ofstream(src / dir / "scale.cu") << "#include \"scale.cuh\"\n";
}

std::string compile(const fs::path& src, const fs::path& obj, const std::string& dir = "kernels/router") {
  fs::create_directories(obj.parent_path());
  const auto r = sh(quote(MOEBENCH_NVCC) + " -c -arch=sm_90a -lineinfo -o " + quote(obj) + " " +
                    quote(src / dir / "scale.cu"));
  EXPECT_EQ(r.code, 0) << r.out;
  return slurp(obj);
}

}  // namespace

TEST(BuildIds, DeviceCodeCountsByItsSassNotItsSource) {
  if (std::string(MOEBENCH_CUOBJDUMP).empty() || std::string(MOEBENCH_NVDISASM).empty())
    GTEST_SKIP() << "cuobjdump or nvdisasm not found: run scripts/setup.sh (it unpacks NVIDIA's wheels)";
  const fs::path d = fs::temp_directory_path() / ("moebench-sass-ids-" + std::to_string(::getpid()));
  fs::remove_all(d);
  const fs::path obj = d / "build/kernels/router/scale.cu.o";
  write_kernel(d / "src", "", "2.0f");
  const std::string obj_a = compile(d / "src", obj);
  const std::string a = ids(d / "src", d / "a.inc", obj.string());
  ASSERT_NE(id_line(a, "router"), "") << a;

  // Comments that move every line: another object (its line table), the same SASS, the same id.
  write_kernel(d / "src", "// scales x\n\n/* by a constant,\n   in place */\n\n", "2.0f");
  EXPECT_NE(compile(d / "src", obj), obj_a) << "the line table should differ, or this test shows nothing";
  EXPECT_EQ(ids(d / "src", d / "b.inc", obj.string()), a) << "a comment edit must keep every id";

  write_kernel(d / "src", "", "3.0f");
  compile(d / "src", obj);
  const std::string c = ids(d / "src", d / "c.inc", obj.string());
  EXPECT_NE(id_line(c, "router"), id_line(a, "router")) << "a code change must change the family's id";
  EXPECT_NE(id_line(c, "moe-layer"), id_line(a, "moe-layer"));
  EXPECT_EQ(id_line(c, "gmm"), id_line(a, "gmm"));
  fs::remove_all(d);
}

// A family's kernel kinds have folders of their own (kernels/gmm/mma/, wgmma/...): their objects
// speak for the family as the ones at its top do.
TEST(BuildIds, DeviceCodeInAFamilySubfolderCounts) {
  if (std::string(MOEBENCH_CUOBJDUMP).empty() || std::string(MOEBENCH_NVDISASM).empty())
    GTEST_SKIP() << "cuobjdump or nvdisasm not found: run scripts/setup.sh (it unpacks NVIDIA's wheels)";
  const fs::path d = fs::temp_directory_path() / ("moebench-sub-ids-" + std::to_string(::getpid()));
  fs::remove_all(d);
  const std::string dir = "kernels/gmm/kind";
  const fs::path obj = d / "build" / dir / "scale.cu.o";
  write_kernel(d / "src", "", "2.0f", dir);
  compile(d / "src", obj, dir);
  const std::string a = ids(d / "src", d / "a.inc", obj.string());
  ASSERT_NE(id_line(a, "gmm"), "") << a;

  write_kernel(d / "src", "", "3.0f", dir);  // the same sources but the header: only the SASS tells
  compile(d / "src", obj, dir);
  const std::string c = ids(d / "src", d / "c.inc", obj.string());
  EXPECT_NE(id_line(c, "gmm"), id_line(a, "gmm")) << "a code change in kernels/gmm/kind/ must change gmm's id";
  EXPECT_EQ(id_line(c, "router"), id_line(a, "router"));
  fs::remove_all(d);
}
