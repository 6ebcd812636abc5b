// --graph-calls: the layer timed as engines run it, beside its time alone. On the cpu backend,
// where no CUDA graph exists, `run` and `sweep` say so (not applicable, with the reason) and give
// no number; a count that is not a positive integer is refused before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/shell.hpp"
#include "support/temp_dirs.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;

const std::string kShape = " --experts 8 --topk 2 --hidden 64 --intermediate 32 --align 4 --backend cpu --threads 2";
const std::string kFast = " --budget 2 --min-time 1ms --max-time 20ms --quiet --tables none";

moe::testing::Proc moebench(const std::string& args) { return sh("timeout -k 5 300 " + std::string(MOEBENCH_EXE) + " " + args); }

}  // namespace

TEST(LayerGraphCli, RunSaysTheCpuHasNoGraphAndKeepsItsOtherLines) {
  const auto r = moebench("run moe-layer" + kShape + " --tokens 4 --repeat 2 --graph-calls 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\ngraph    not applicable: the cpu backend runs on the host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ntime     median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nvalidate "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("alone    "), std::string::npos) << r.out;  // no pdl comparison: nothing to compare
  // Other families have no graph line.
  const auto g = moebench("run router --experts 8 --topk 2 --backend cpu --tokens 4 --repeat 1");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_EQ(g.out.find("graph "), std::string::npos) << g.out;
}

TEST(LayerGraphCli, GraphCallsMustBeAPositiveInteger) {
  for (const char* bad : {"0", "-1", "x", "2.5"}) {
    const auto r = moebench("run moe-layer" + kShape + " --tokens 4 --graph-calls " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("moebench: error:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--graph-calls"), std::string::npos) << r.out;
    const auto s = moebench("sweep moe-layer" + kShape + " --tokens 4 --dry-run --graph-calls " + std::string(bad));
    EXPECT_EQ(s.code, 2) << bad << ": " << s.out;
    EXPECT_NE(s.out.find("--graph-calls"), std::string::npos) << s.out;
  }
}

TEST(LayerGraphCli, GraphCallsIsRefusedWhereNoLayerIsTimed) {
  const auto r = moebench("run router --experts 8 --topk 2 --backend cpu --tokens 4 --graph-calls 3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench: error: --graph-calls times moe-layer in a CUDA graph: leave it out for router"),
            std::string::npos)
      << r.out;
  const auto s = moebench("sweep gmm --backend cpu --tokens 4 --dry-run --graph-calls 3");
  EXPECT_EQ(s.code, 2) << s.out;
  EXPECT_NE(s.out.find("sweep moe-layer or all"), std::string::npos) << s.out;
  // Where the layer is swept, it is taken (all: the layer among the families).
  const auto all = moebench("sweep all" + kShape + " --tokens 4 --dry-run --graph-calls 3");
  EXPECT_EQ(all.code, 0) << all.out;
}

TEST(LayerGraphCli, SweepRecordsTheLayerNotGraphTimedOnTheCpuAndItsStagesUnchanged) {
  const fs::path d = moe::testing::fresh_temp_dir("layer-graph-cli");
  const auto r = moebench("sweep moe-layer" + kShape + kFast + " --tokens 4 --graph-calls 4 --out " + quote(d / "out"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json res = json::parse(slurp(d / "out" / "results.json"));
  int layer = 0;
  for (auto& rec : res["records"]) {
    if (rec["kernel"] != "moe-layer") {
      EXPECT_FALSE(rec.contains("graph")) << rec["kernel"];
      EXPECT_FALSE(rec.contains("timing")) << rec["kernel"];
      continue;
    }
    if (rec["status"] != "ok") continue;
    ++layer;
    EXPECT_EQ(rec["timing"], "alone");
    EXPECT_TRUE(rec["pdl"] == 1 || rec["pdl"] == 0) << rec.dump();
    EXPECT_EQ(rec["graph"]["graph_calls"], 4);
    EXPECT_EQ(rec["graph"]["status"], "not applicable");
    EXPECT_TRUE(rec["graph"]["stats"].is_null());
  }
  EXPECT_GE(layer, 1);
  const json header = json::parse(slurp(d / "out" / "journal.jsonl").substr(0, slurp(d / "out" / "journal.jsonl").find('\n')));
  EXPECT_EQ(header["settings"]["graph_calls"], 4);
  const std::string csv = slurp(d / "out" / "results.csv");
  EXPECT_NE(csv.find(",timing,graph_calls,pdl\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",graph,4,1\n"), std::string::npos) << csv;
  const std::string md = slurp(d / "out" / "summary.md");
  EXPECT_NE(md.find("Not graph-timed: not applicable: the cpu backend"), std::string::npos) << md;
  // The layer's stages were tuned in the same sweep: their chosen medians sum beside the tuned
  // layer, not beside the baseline of stage defaults (which no stage point timed).
  const auto tuned = md.find("| 4 | stages | auto (the tuned stages) | 1 | ");
  ASSERT_NE(tuned, std::string::npos) << md;
  EXPECT_NE(md.substr(tuned, md.find('\n', tuned) - tuned).find("(router "), std::string::npos) << md;
  const auto baseline = md.find("| 4 | stages | default (every stage) | 1 | ");
  ASSERT_NE(baseline, std::string::npos) << md;
  const std::string row = md.substr(baseline, md.find('\n', baseline) - baseline);
  EXPECT_EQ(row.substr(row.size() - 5), "| - |") << row;
  fs::remove_all(d);
}
