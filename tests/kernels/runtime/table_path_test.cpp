// Table file names: a problem key is the name, except where a file system would refuse it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "runtime/table.hpp"

namespace moe {
namespace {

namespace fs = std::filesystem;

std::string file_name(const std::string& key) {
  return fs::path(runtime::table_path("/t", "cpu", "moe-layer", key)).filename().string();
}

// gpt-oss-120b's layer: its key is longer than the 255 bytes a file name may take.
Params gpt_oss_layer(std::int64_t topk) {
  return Params{{"activation", std::string("swiglu_oai")}, {"align", std::int64_t{16}}, {"alpha", 1.702},
                {"bias", std::int64_t{0}}, {"bias13", std::int64_t{1}}, {"bias2", std::int64_t{1}},
                {"dtype", std::string("mxfp4")}, {"expert_begin", std::int64_t{0}}, {"expert_end", std::int64_t{-1}},
                {"experts", std::int64_t{128}}, {"group_score", std::string("top2_sum")}, {"groups", std::int64_t{1}},
                {"hidden", std::int64_t{2880}}, {"intermediate", std::int64_t{2880}}, {"limit", 7.0},
                {"renormalize", std::int64_t{1}}, {"rsf", 1.0}, {"scoring", std::string("softmax")},
                {"shared", std::int64_t{0}}, {"topk", topk}, {"topk_group", std::int64_t{1}},
                {"w13_block", std::int64_t{1}}, {"w13_layout", std::string("interleaved")},
                {"tokens", std::int64_t{1}}};
}

TEST(TablePath, AShortKeyIsTheFileName) {
  EXPECT_EQ(runtime::table_path("/t", "cpu", "gmm", "dtype=bf16,experts=8"), "/t/cpu/gmm/dtype=bf16,experts=8.json");
  const std::string at_limit(200, 'a');
  EXPECT_EQ(file_name(at_limit), at_limit + ".json");
}

TEST(TablePath, ALongKeyFitsAFileNameAndStaysItsOwn) {
  const std::string k4 = runtime::problem_key(gpt_oss_layer(4)), k5 = runtime::problem_key(gpt_oss_layer(5));
  ASSERT_GT(k4.size(), 255u);
  const std::string n4 = file_name(k4), n5 = file_name(k5);
  EXPECT_LE(n4.size(), 255u);
  EXPECT_EQ(n4.rfind(k4.substr(0, 160), 0), 0u) << n4;  // it still reads as its problem
  EXPECT_NE(n4, n5);                                     // keys that differ past the kept part
  EXPECT_EQ(n4, file_name(k4));                          // the same name for every reader
  EXPECT_NE(file_name(std::string(201, 'a')), file_name(std::string(201, 'b')));
}

}  // namespace
}  // namespace moe
