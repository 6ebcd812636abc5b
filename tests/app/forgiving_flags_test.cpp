// Flags as users coming from vLLM, SGLang or Hugging Face type them: either spelling of a
// name, "did you mean" for a near miss, a word about comma-separated lists, and a Hugging Face
// model id where a preset is meant.
#include <gtest/gtest.h>

#include <string>

#include "support/shell.hpp"

namespace {

using moe::testing::sh;

moe::testing::Proc moebench(const std::string& args) { return sh("timeout -k 5 120 " + std::string(MOEBENCH_EXE) + " " + args); }

const std::string kSmallGmm = " --experts 4 --topk 2 --hidden 64 --intermediate 32 --tokens 4 --backend cpu --repeat 1";

TEST(ForgivingFlags, SnakeAndDashSpellingsOfEveryFlagRunTheSameProblem) {
  const auto snake = moebench("run gmm --stage down --routed_weight 1 --zipf_s 0.5 --dist zipf" + kSmallGmm);
  const auto dashed = moebench("run gmm --stage down --routed-weight 1 --zipf-s 0.5 --dist zipf" + kSmallGmm);
  ASSERT_EQ(snake.code, 0) << snake.out;
  ASSERT_EQ(dashed.code, 0) << dashed.out;
  const auto problem = [](const std::string& out) { return out.substr(out.find("problem"), out.find('\n', out.find("problem")) - out.find("problem")); };
  EXPECT_EQ(problem(snake.out), problem(dashed.out));
  EXPECT_NE(problem(dashed.out).find("routed_weight=1"), std::string::npos) << dashed.out;
  // Options too: both spellings reach --ep-rank (which then needs a model to shard).
  for (const char* flag : {"--ep-rank", "--ep_rank", "--hf_config"}) {
    const auto r = moebench(std::string("run router --ep 2 ") + flag + " 1 --tokens 4 --backend cpu");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.out.find("unknown flag"), std::string::npos) << flag << ": " << r.out;
  }
}

TEST(ForgivingFlags, UnknownFlagSaysWhichOneWasMeant) {
  auto r = moebench("run router --modle qwen3-30b-a3b");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench: error: unknown flag --modle: did you mean --model? (see `moebench run --help`)"), std::string::npos)
      << r.out;
  r = moebench("sweep router --num-experts 64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown flag --num-experts: did you mean --experts?"), std::string::npos) << r.out;
  r = moebench("lookup router --zzzzzz 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown flag --zzzzzz"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;  // nothing is near
}

TEST(ForgivingFlags, SpaceSeparatedListIsToldToUseCommas) {
  const auto r = moebench("sweep router --model qwen3-30b-a3b --tokens 1 16 256 --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("lists are comma-separated, as in --tokens 1,16,256"), std::string::npos) << r.out;
}

TEST(ForgivingFlags, HuggingFaceModelIdResolvesToItsPresetOrPointsToHfConfig) {
  auto r = moebench("run router --model mistralai/Mixtral-8x7B --tokens 4 --backend cpu --repeat 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is the preset 'mixtral-8x7b'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("experts=8"), std::string::npos) << r.out;
  r = moebench("run router --model someone/Unknown-MoE-7B --tokens 4 --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--hf-config config.json"), std::string::npos) << r.out;
  r = moebench("run router --model qwen3-30b --tokens 4 --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("(did you mean qwen3-30b-a3b?)"), std::string::npos) << r.out;
}

TEST(ForgivingFlags, RunHelpOffersOneTokenCount) {
  const auto r = moebench("run --help");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("token count: one number"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("1,16,256"), std::string::npos) << r.out;
}

}  // namespace

// "--expert" is the plural's typo, not --expert_begin's prefix; vLLM's one-dash -tp is --tp.
TEST(ForgivingFlags, PluralsRankFirstAndOneDashLongFlagsAreNamed) {
  auto r = moebench("sweep router --expert 64 --backend cpu --dry-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown flag --expert: did you mean --experts?"), std::string::npos) << r.out;
  r = moebench("run gmm --model qwen3-30b-a3b -tp 4 --tokens 1 --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench: error: unknown flag -tp: did you mean --tp? (long flags take two dashes"), std::string::npos)
      << r.out;
  r = moebench("sweep router -experts=8 --backend cpu --dry-run");
  EXPECT_NE(r.out.find("did you mean --experts?"), std::string::npos) << r.out;
}

// A Hugging Face id is the preset in its repository's dtype: Qwen/Qwen3-30B-A3B-FP8 (once refused)
// is fp8, Qwen/Qwen3-30B-A3B bf16 (once described as served in fp8), DeepSeek-V3's only repo fp8.
TEST(ForgivingFlags, HuggingFaceIdsTakeTheirRepositorysDtype) {
  auto r = moebench("lookup gmm --model Qwen/Qwen3-30B-A3B-FP8 --tokens 4 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is the preset 'qwen3-30b-a3b' with dtype fp8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dtype=fp8"), std::string::npos) << r.out;
  r = moebench("lookup gmm --model Qwen/Qwen3-30B-A3B --tokens 4 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("with dtype bf16 (its fp8 weights are Qwen/Qwen3-30B-A3B-FP8)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dtype=bf16"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("served in fp8"), std::string::npos) << r.out;
  r = moebench("lookup gmm --model deepseek-ai/DeepSeek-V3 --tokens 4 --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("dtype=fp8"), std::string::npos) << r.out;
}
