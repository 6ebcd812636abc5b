// An engine's path: install the package, build examples/consumer against it with
// find_package(moebench), run one MoE layer through "auto", and see that editing a table
// entry changes the config the library launches.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int rc;
  std::string out;
};

Result sh(const std::string& cmd) {
  Result r{0, {}};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The install is moved after installing and the example copied out of the source tree, so
// nothing can be found through a path compiled in at build time: the installed library must
// find its shipped tables relative to where its package now is.
TEST(Install, ConsumerBuildsAgainstInstalledTreeAndFollowsTables) {
  const fs::path tmp = fs::temp_directory_path() / ("moebench-install-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  const fs::path installed = tmp / "installed", prefix = tmp / "moved", src = tmp / "consumer-src",
                 cons = tmp / "consumer", shipped = prefix / "share/moebench/configs";
  auto r = sh("cmake --install " + std::string(MOEBENCH_BUILD_DIR) + " --prefix " + installed.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  fs::rename(installed, prefix);
  ASSERT_TRUE(fs::exists(prefix / "lib/cmake/moebench/moebenchConfig.cmake"));
  ASSERT_TRUE(fs::exists(prefix / "include/moe/moe.hpp"));
  ASSERT_TRUE(fs::exists(shipped / "models/deepseek-v3.json"));
  fs::copy(fs::path(MOEBENCH_SOURCE_DIR) / "examples/consumer", src, fs::copy_options::recursive);
  r = sh("cmake -S " + src.string() + " -B " + cons.string() + " -G Ninja -DCMAKE_PREFIX_PATH=" + prefix.string() +
         " && cmake --build " + cons.string());
  ASSERT_EQ(r.rc, 0) << r.out;

  // A real table for the consumer's router shape (Qwen3-30B-A3B's), from the installed binary,
  // into the installation's own shipped tables.
  r = sh((prefix / "bin/moebench").string() +
         " sweep router --experts 128 --topk 8 --scoring softmax --renormalize 1 --dtype bf16 --tokens 16"
         " --backend cpu --quiet --out " + (tmp / "sweep").string() + " --tables " + shipped.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  fs::path table;
  for (auto& e : fs::recursive_directory_iterator(shipped / "cpu"))
    if (e.path().extension() == ".json") table = e.path();
  ASSERT_FALSE(table.empty());

  // No $MOEBENCH_CONFIG_DIR and no ./configs: only the installed tables can answer.
  const std::string run = "cd " + tmp.string() + " && env -u MOEBENCH_CONFIG_DIR " + (cons / "consumer").string() + " 16";
  r = sh(run);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("backend: cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mean |out|"), std::string::npos) << r.out;
  nlohmann::json j;
  std::ifstream(table) >> j;
  const std::string chosen = j["entries"]["16"]["config"].dump();
  EXPECT_NE(r.out.find("exact entry for 16 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(prefix.string()), std::string::npos) << "the table should be the moved prefix's:\n" << r.out;
  EXPECT_EQ(r.out.find(MOEBENCH_SOURCE_DIR), std::string::npos) << r.out;

  // Edit the entry to another valid config: the library must launch that one.
  const bool heap = j["entries"]["16"]["config"]["select"] == "heap";
  j["entries"]["16"]["config"]["select"] = heap ? "iterative" : "heap";
  j["entries"]["16"]["config"]["rows_per_task"] = 4;
  std::ofstream(table) << j.dump(2);
  r = sh(run);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(std::string("rows_per_task=4,select=") + (heap ? "iterative" : "heap")), std::string::npos)
      << "was " << chosen << "\n" << r.out;
  fs::remove_all(tmp);
}

}  // namespace
