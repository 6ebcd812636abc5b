// Tables know the build that tuned them: runtime dispatch and lookup treat a table of another
// build id (or of none) as missing, fall back to the default with one warning that says why
// and how to refresh it, and use a current table in a later folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "moe/cuda_device.hpp"
#include "runtime/build_id.hpp"
#include "runtime/lookup.hpp"
#include "runtime/params_json.hpp"
#include "support/temp_dirs.hpp"

using namespace moe;
using namespace moe::runtime;
namespace fs = std::filesystem;

namespace {

Params router_problem() {
  return complete(family("router").problem_params,
                  Params{{"tokens", std::int64_t{16}}, {"experts", std::int64_t{64}}, {"topk", std::int64_t{4}}}, "router");
}

// A one-entry table whose config differs from the default, so using it is visible.
Params tuned_config(const Params& problem) {
  const BackendImpl& b = family("router").need_backend(Backend::cpu);
  const Params def = b.default_config(problem, cpu_device_info(1));
  for (const Params& c : b.space(problem, cpu_device_info(1), true))
    if (c.str() != def.str()) return c;
  ADD_FAILURE() << "the router's cpu space has one config";
  return def;
}

std::string write_table(const fs::path& dir, const Params& problem, const Params& config, const nlohmann::json& build) {
  const std::string path = table_path(dir.string(), "cpu", "router", problem_key(problem));
  fs::create_directories(fs::path(path).parent_path());
  nlohmann::json t = {{"schema", kTableSchema},
                      {"kernel", "router"},
                      {"backend", "cpu"},
                      {"device", "cpu"},
                      {"entries", {{"16", {{"config", params_to_json(config)}, {"median_us", 1.0}}}}}};
  if (!build.is_null()) t["build"] = build;
  std::ofstream(path) << t.dump(1);
  return path;
}

}  // namespace

TEST(TableBuildId, EveryLibraryFamilyHasOneAndTheyDiffer) {
  std::set<std::string> ids;
  for (const FamilyDesc* f : families()) {
    const std::string id = family_build_id(f->name);
    EXPECT_EQ(id.size(), 16u) << f->name;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), families().size());
  EXPECT_EQ(family_build_id("no-such-family"), "");
}

TEST(TableBuildId, AnotherBuildsTableIsTreatedAsMissing) {
  const fs::path d = moe::testing::fresh_temp_dir("table-build-id");
  const Params problem = router_problem();
  const Params tuned = tuned_config(problem);
  const FamilyDesc& f = family("router");
  const std::string path = write_table(d / "a", problem, tuned, {{"id", family_build_id("router")}});
  Choice c = choose_config(f, Backend::cpu, problem, cpu_device_info(1), {(d / "a").string()}, true);
  ASSERT_EQ(c.how, Match::exact) << c.reason;
  EXPECT_EQ(c.config.str(), tuned.str());

  // The same table with its id edited: the default, and a warning naming the table, why, and the sweep.
  write_table(d / "a", problem, tuned, {{"id", "0123456789abcdef"}});
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(2));
  c = choose_config(f, Backend::cpu, problem, cpu_device_info(1), {(d / "a").string()}, true);
  EXPECT_EQ(c.how, Match::fallback);
  EXPECT_NE(c.config.str(), tuned.str());
  EXPECT_NE(c.warning.find(path), std::string::npos) << c.warning;
  EXPECT_NE(c.warning.find("another build of the router kernels"), std::string::npos) << c.warning;
  EXPECT_NE(c.warning.find("0123456789abcdef"), std::string::npos) << c.warning;
  EXPECT_NE(c.warning.find("moebench sweep router"), std::string::npos) << c.warning;
  EXPECT_EQ(c.reason.rfind("table " + path + " no longer applies", 0), 0u) << c.reason;

  // A table without any id (written before tables had them) is not trusted either.
  write_table(d / "a", problem, tuned, nullptr);
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(4));
  c = choose_config(f, Backend::cpu, problem, cpu_device_info(1), {(d / "a").string()}, true);
  EXPECT_EQ(c.how, Match::fallback);
  EXPECT_NE(c.warning.find("records no build id"), std::string::npos) << c.warning;

  // A current table in a later folder is used: the stale one was only "missing".
  write_table(d / "b", problem, tuned, {{"id", family_build_id("router")}});
  c = choose_config(f, Backend::cpu, problem, cpu_device_info(1), {(d / "a").string(), (d / "b").string()}, true);
  EXPECT_EQ(c.how, Match::exact) << c.reason;
  EXPECT_EQ(c.config.str(), tuned.str());
  fs::remove_all(d);
}

#include "tuner/store/tables.hpp"

TEST(TableBuildId, TheTunerWritesTheBuildAndTheDevice) {
  const fs::path d = moe::testing::fresh_temp_dir("table-build-written");
  const Params problem = router_problem();
  const nlohmann::json results = {
      {"meta", {{"device_slug", "nvidia-h100-80gb-hbm3"}, {"device", "NVIDIA H100 80GB HBM3"}, {"backend", "cuda"},
                {"sm_count", 132}, {"cuda_runtime", "13.0"}, {"driver", "13.0"}}},
      {"records", nlohmann::json::array()},
      {"points", {{{"kernel", "router"}, {"problem_key", problem_key(problem)}, {"tokens", 16},
                   {"chosen", {{"config", params_to_json(tuned_config(problem))}, {"median_us", 2.0}}}}}}};
  const auto written = tuner::write_tables(results, d.string());
  ASSERT_EQ(written.size(), 1u);
  std::ifstream in(written[0]);
  const auto t = nlohmann::json::parse(in);
  EXPECT_EQ(t["build"]["id"], family_build_id("router"));
  EXPECT_EQ(t["build"]["cuda_runtime"], "13.0");
  EXPECT_EQ(t["build"]["device_name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t["build"]["sm_count"], 132);
  EXPECT_EQ(load_table(written[0]).build_id, family_build_id("router"));
  fs::remove_all(d);
}
