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

TEST(Install, ConsumerBuildsAgainstInstalledTreeAndFollowsTables) {
  const fs::path tmp = fs::temp_directory_path() / ("moebench-install-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  const fs::path prefix = tmp / "prefix", cons = tmp / "consumer", tables = tmp / "tables";
  auto r = sh("cmake --install " + std::string(MOEBENCH_BUILD_DIR) + " --prefix " + prefix.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_TRUE(fs::exists(prefix / "lib/cmake/moebench/moebenchConfig.cmake"));
  ASSERT_TRUE(fs::exists(prefix / "include/moe/moe.hpp"));
  ASSERT_TRUE(fs::exists(prefix / "share/moebench/configs/models/deepseek-v3.json"));
  r = sh("cmake -S " + std::string(MOEBENCH_SOURCE_DIR) + "/examples/consumer -B " + cons.string() +
         " -G Ninja -DCMAKE_PREFIX_PATH=" + prefix.string() + " && cmake --build " + cons.string());
  ASSERT_EQ(r.rc, 0) << r.out;

  // A real table for the consumer's router shape, from the installed binary.
  r = sh((prefix / "bin/moebench").string() +
         " sweep router --experts 16 --topk 4 --scoring softmax --dtype bf16 --tokens 16 --backend cpu --quiet"
         " --out " + (tmp / "sweep").string() + " --tables " + tables.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  fs::path table;
  for (auto& e : fs::recursive_directory_iterator(tables))
    if (e.path().extension() == ".json") table = e.path();
  ASSERT_FALSE(table.empty());

  const std::string run = "MOEBENCH_CONFIG_DIR=" + tables.string() + " " + (cons / "consumer").string() + " 16";
  r = sh(run);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("mean |out|"), std::string::npos) << r.out;
  nlohmann::json j;
  std::ifstream(table) >> j;
  const std::string chosen = j["entries"]["16"]["config"].dump();
  EXPECT_NE(r.out.find("exact entry for 16 tokens"), std::string::npos) << r.out;

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
