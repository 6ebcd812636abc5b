// Problem axes through the moebench binary: lists and ranges for every problem flag, the cross
// product swept as one sweep (results, summary, tables, plot), skipped combinations, --zip,
// --dry-run, shards, resume, compare; and the token and --ep fixes that came with them.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "moe/family.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/store/results.hpp"

namespace fs = std::filesystem;
using moe::testing::Proc;
using moe::testing::quote;
using moe::testing::slurp;
using moe::tuner::json;

namespace {

Proc mb(const std::string& args) { return moe::testing::sh("timeout -k 5 300 " + std::string(MOEBENCH_EXE) + " " + args); }

fs::path temp_dir(const std::string& name) { return moe::testing::fresh_temp_dir("axes-" + name); }

const std::string kQuick = " --backend cpu --threads 2 --quiet --budget 1 --min-time 1ms --max-time 20ms";

#define NEED_ROUTER()                                              \
  if (!moe::family("router").backend(moe::Backend::cpu)) \
  GTEST_SKIP() << "the router family has no cpu backend in this build"

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// The issue's own example: 4 x 2 x 2 problems, 2 token counts: 16 tables, 32 points.
TEST(AxesCli, RouterAcrossExpertsTopkAndDtype) {
  NEED_ROUTER();
  const fs::path d = temp_dir("cross");
  const Proc r = mb("sweep router --experts 64,128,256,384 --topk 4,8 --dtype bf16,f16 --tokens 1,16 --out " +
                    quote(d / "out") + " --tables " + quote(d / "tables") + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  int tables = 0;
  for (auto& e : fs::recursive_directory_iterator(d / "tables")) tables += e.path().extension() == ".json";
  EXPECT_EQ(tables, 16);
  const json res = moe::tuner::read_results((d / "out").string());
  ASSERT_EQ(res["points"].size(), 32u);
  std::set<std::string> combos;
  for (auto& p : res["points"]) {
    ASSERT_TRUE(p.contains("axes")) << p.dump();
    EXPECT_TRUE(p.contains("chosen")) << p.dump();
    const json& a = p["axes"];
    combos.insert(a.value("experts", "?") + "/" + a.value("topk", "?") + "/" + a.value("dtype", "?"));
    // The axis values are the problem's own.
    EXPECT_NE(p.value("problem_key", "").find("experts=" + a.value("experts", "?")), std::string::npos) << p.dump();
  }
  EXPECT_EQ(combos.size(), 16u);
  ASSERT_EQ(res["meta"]["axes"].size(), 3u);
  std::set<std::string> names;
  for (auto& a : res["meta"]["axes"]) names.insert(a.value("name", ""));
  EXPECT_EQ(names, (std::set<std::string>{"dtype", "experts", "topk"}));
  for (auto& rec : res["records"]) EXPECT_TRUE(rec.contains("axes")) << rec.dump();
  const std::string md = slurp(d / "out" / "summary.md");
  EXPECT_EQ(count(md, "\n## router  "), 16u) << md;  // a table per problem
  for (const char* axis : {"experts", "topk", "dtype"})
    EXPECT_NE(md.find(std::string("## across ") + axis), std::string::npos) << md;
  EXPECT_NE(md.find("| experts=64 | experts=128 | experts=256 | experts=384 |"), std::string::npos) << md;
  // compare, the sweep against itself: a line per axis value.
  const Proc c = mb("compare " + quote(d / "out") + "/results.json " + quote(d / "out") + "/results.json");
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("| experts | 384 | 8 |"), std::string::npos) << c.out;  // 8 records: 2 topk x 2 dtype x 2 T
  EXPECT_NE(c.out.find("| dtype | f16 | 16 |"), std::string::npos) << c.out;
  // plot.py: time across each axis.
  if (moe::testing::sh("python3 -c 'import matplotlib'").code == 0) {
    const Proc p = moe::testing::sh("python3 " + quote(fs::path(MOEBENCH_SOURCE_DIR) / "scripts" / "plot.py") + " " +
                                    quote(d / "out") + " --out " + quote(d / "png"));
    ASSERT_EQ(p.code, 0) << p.out;
    for (const char* axis : {"experts", "topk", "dtype"})
      EXPECT_TRUE(fs::exists(d / "png" / (std::string("axis-router-") + axis + ".png"))) << p.out;
  }
  fs::remove_all(d);
}

// A combination that is no problem is skipped with its reason; the rest runs; exit 1 only when
// nothing could run.
TEST(AxesCli, InvalidCombinationsAreSkippedWithTheirReason) {
  NEED_ROUTER();
  const fs::path d = temp_dir("skip");
  Proc r = mb("sweep router --groups 8 --topk_group 8 --topk 2 --experts 8,12,16 --tokens 1 --tables none --out " +
              quote(d / "a") + kQuick);
  ASSERT_EQ(r.code, 0) << r.out;
  const json res = moe::tuner::read_results((d / "a").string());
  ASSERT_EQ(res["points"].size(), 3u);
  for (auto& p : res["points"]) {
    const bool twelve = p["axes"]["experts"] == "12";
    EXPECT_EQ(p.value("skipped", false), twelve) << p.dump();
    EXPECT_EQ(p.contains("chosen"), !twelve) << p.dump();
    if (twelve) EXPECT_NE(p.value("error", "").find("12"), std::string::npos) << p.dump();
  }
  const std::string md = slurp(d / "a" / "summary.md");
  EXPECT_NE(md.find("skipped: "), std::string::npos) << md;
  EXPECT_NE(md.find("experts=12"), std::string::npos) << md;
  r = mb("sweep router --groups 8 --topk_group 8 --topk 2 --experts 12,20 --tokens 1 --tables none --out " +
         quote(d / "b") + kQuick);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("moebench: error: nothing could run"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(AxesCli, DryRunPrintsThePlanAndRunsNothing) {
  NEED_ROUTER();
  const fs::path d = temp_dir("dry");
  Proc r = mb("sweep router --groups 8 --topk_group 8 --topk 2 --experts 8,12,16 --tokens 1,16 --backend cpu --dry-run --out " +
              quote(d / "never"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(d / "never"));
  EXPECT_NE(r.out.find("plan: 3 problems x 2 token counts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("axis experts: 8,12,16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router experts=12: skipped: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 6 points (2 skipped)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("estimated"), std::string::npos) << r.out;
  // --zip pairs the lists: 2 problems, not 4.
  r = mb("sweep router --experts 64,128 --topk 4,8 --zip experts,topk --tokens 1 --backend cpu --dry-run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("plan: 2 problems"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router experts=128,topk=8:"), std::string::npos) << r.out;
  // --model and --set take lists as well.
  r = mb("sweep router --model qwen3-30b-a3b,deepseek-v3 --set topk=4,8 --tokens 1 --backend cpu --dry-run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("plan: 4 problems"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router model=deepseek-v3,topk=8:"), std::string::npos) << r.out;
  r = mb("sweep router --experts 64,128 --topk 4,8,16 --zip experts,topk --tokens 1 --backend cpu --dry-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("differ in length"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// --zip names a list by its flag's spelling or its parameter's (hf-config, hf_config), as every
// flag takes either, and each list once.
TEST(AxesCli, ZipTakesEitherSpellingOfEachNameOnce) {
  NEED_ROUTER();
  const std::string hf = std::string(MOEBENCH_TEST_DATA) + "/hf/";
  const std::string configs = " --hf-config " + quote(hf + "qwen3-30b-a3b.json") + "," + quote(hf + "deepseek-v3.json") +
                              " --tp 1,2 --tokens 1 --backend cpu --dry-run";
  std::string plan;
  for (const char* names : {"hf-config,tp", "hf_config,tp"}) {
    const Proc r = mb("sweep router" + configs + " --zip " + names);
    ASSERT_EQ(r.code, 0) << names << ": " << r.out;
    EXPECT_NE(r.out.find("plan: 2 problems"), std::string::npos) << names << ": " << r.out;
    if (plan.empty()) plan = r.out;
    EXPECT_EQ(r.out, plan) << names;
  }
  const std::string groups = " --experts 16,32 --groups 4 --topk 2 --topk-group 1,2 --tokens 1 --backend cpu --dry-run";
  for (const char* names : {"experts,topk-group", "experts,topk_group"}) {
    const Proc r = mb("sweep router" + groups + " --zip " + names);
    ASSERT_EQ(r.code, 0) << names << ": " << r.out;
    EXPECT_NE(r.out.find("plan: 2 problems"), std::string::npos) << names << ": " << r.out;
    EXPECT_NE(r.out.find("router experts=32,topk_group=2:"), std::string::npos) << names << ": " << r.out;
  }
  // A list named twice pairs nothing: refused, whichever spellings.
  for (const std::string& zip : {std::string(" --zip experts,experts"), std::string(" --zip topk-group,topk_group,experts"),
                                 std::string(" --zip experts,topk_group --zip experts,topk_group")}) {
    const Proc r = mb("sweep router" + groups + zip);
    EXPECT_EQ(r.code, 2) << zip << ": " << r.out;
    EXPECT_EQ(r.out.rfind("moebench: error: --zip names ", 0), 0u) << zip << ": " << r.out;
    EXPECT_NE(r.out.find(" twice"), std::string::npos) << zip << ": " << r.out;
  }
}

// Shards cut across the whole cross product: the halves merged hold the unsharded plan's points.
TEST(AxesCli, ShardHalvesMergeIntoTheWholeCrossProduct) {
  NEED_ROUTER();
  const fs::path d = temp_dir("shard");
  const std::string what = "sweep router --experts 64,128 --topk 2-8 --tokens 1,4 --tables none" + kQuick;
  ASSERT_EQ(mb(what + " --out " + quote(d / "all")).code, 0);
  for (int i = 0; i < 2; ++i) {
    const Proc r = mb(what + " --shard " + std::to_string(i) + "/2 --out " + quote(d / ("s" + std::to_string(i))));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const Proc m = mb("merge " + quote(d / "s0") + " " + quote(d / "s1") + " --out " + quote(d / "m"));
  ASSERT_EQ(m.code, 0) << m.out;
  auto keys = [](const fs::path& dir) {
    std::set<std::string> k;
    const json res = moe::tuner::read_results(dir.string());
    for (auto& p : res["points"]) k.insert(p.value("point", "") + " " + p["axes"].dump());
    return k;
  };
  EXPECT_EQ(keys(d / "all").size(), 12u);  // 2 experts x 3 topk (2,4,8) x 2 token counts
  EXPECT_EQ(keys(d / "m"), keys(d / "all"));
  // A resume with other axis values is refused, naming the axis.
  const Proc r = mb("sweep router --experts 64,256 --topk 2-8 --tokens 1,4 --tables none --resume --out " + quote(d / "all") + kQuick);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("axis experts: 64,128 vs 64,256"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(AxesCli, TokenCountsAreCheckedUpFront) {
  const fs::path d = temp_dir("tokens");
  const std::string rest = " --backend cpu --tables none --quiet --out " + quote(d / "never");
  struct Case {
    std::string tokens, says;
  };
  for (const Case& c : {Case{"-5", "'-5' is not a positive integer"}, Case{"1,,16", "empty item"},
                        Case{"99999999999", "above the limit of 2147483648"},
                        Case{"1-4611686018427387904", "above the limit 2147483648"}}) {
    const Proc r = mb("sweep router --tokens " + c.tokens + rest);
    EXPECT_EQ(r.code, 2) << c.tokens << ": " << r.out;
    EXPECT_NE(r.out.find("moebench: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.tokens << ": " << r.out;
  }
  Proc r = mb("sweep router --tokens 4 --set tokens=2" + rest);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("give token counts with --tokens"), std::string::npos) << r.out;
  r = mb("sweep router --tokens 4 --experts 64 --set experts=128" + rest);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("again"), std::string::npos) << r.out;
  r = mb("run router --experts 64,128 --tokens 4 --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--experts has 2 values"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "never"));
  fs::remove_all(d);
}

// --tp/--ep divide what the flags leave, and sweep all / moe-layer give the slice to the layer
// and its dispatch and gmm stages.
TEST(AxesCli, ExpertParallelismSlicesTheOverriddenExpertCount) {
  if (!moe::family("dispatch").backend(moe::Backend::cpu)) GTEST_SKIP() << "no cpu dispatch in this build";
  Proc r = mb("run dispatch --model deepseek-v3 --experts 64 --ep 8 --ep-rank 1 --hidden 128 --tokens 4 --backend cpu");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("expert_begin=8,expert_end=16"), std::string::npos) << r.out;
  r = mb("run dispatch --model qwen3-30b-a3b --experts 32 --ep 4 --ep-rank 3 --hidden 128 --tokens 4 --backend cpu");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("expert_begin=24,expert_end=32"), std::string::npos) << r.out;
  for (const char* what : {"all", "moe-layer"}) {
    r = mb(std::string("sweep ") + what + " --model qwen3-30b-a3b --ep 8 --ep-rank 1 --tokens 1 --backend cpu --dry-run");
    ASSERT_EQ(r.code, 0) << r.out;
    // dispatch, gmm up, gmm down and the layer itself
    EXPECT_EQ(count(r.out, "expert_begin=16,expert_end=32"), 4u) << what << ": " << r.out;
  }
  // --ep as an axis: a degree that does not divide the experts is a skipped combination.
  r = mb("sweep dispatch --model qwen3-30b-a3b --ep 1,3,8 --tokens 1 --backend cpu --dry-run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("dispatch ep=3: skipped: --ep 3 does not divide the 128 routed experts"), std::string::npos) << r.out;
}

// The layer takes the slice as its dispatch and gmm stages do: a deepseek-v3 rank at --ep 8
// holds 32 of the 256 experts (the whole model's weights would not fit in host memory).
TEST(AxesCli, LayerRunsOnItsExpertSlice) {
  const Proc r = mb("run moe-layer --model deepseek-v3 --ep 8 --ep-rank 1 --hidden 256 --intermediate 128 --tokens 16 "
                    "--backend cpu --repeat 2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("expert_begin=32,expert_end=64"), std::string::npos) << r.out;
}

// The explosion of the trial, with and without --dry-run: one error line naming the count and
// what to do, exit 2, before any journal or plan exists.
TEST(AxesCli, TooManyCombinationsAreRefusedInDryRunAndSweep) {
  NEED_ROUTER();
  std::string experts, topk;
  for (int i = 1; i <= 4096; ++i) experts += (i > 1 ? "," : "") + std::to_string(i);
  for (int i = 1; i <= 64; ++i) topk += (i > 1 ? "," : "") + std::to_string(i);
  const fs::path d = temp_dir("explosion");
  for (const std::string& extra : std::vector<std::string>{" --dry-run", " --out " + quote(d / "out") + " --tables none"}) {
    const Proc r = mb("sweep router --experts " + experts + " --topk " + topk + " --tokens 1" + kQuick + extra);
    EXPECT_EQ(r.code, 2) << r.out.substr(0, 2000);
    EXPECT_NE(r.out.find("moebench: error: the problem axes make 262144 combinations"), std::string::npos) << r.out.substr(0, 2000);
    EXPECT_NE(r.out.find("--zip"), std::string::npos) << r.out.substr(0, 2000);
    EXPECT_EQ(count(r.out, "\n"), 1u) << "one line: " << r.out.substr(0, 2000);
  }
  EXPECT_FALSE(fs::exists(d / "out" / "journal.jsonl"));
}
