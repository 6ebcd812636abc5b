// Problem axes: how a flag's text becomes values (lists, ranges, --tokens), and how the axes
// expand into combinations (cross product, --zip).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>

#include "moe/cuda_device.hpp"
#include "moe/error.hpp"
#include "moe/family.hpp"
#include "support/error_text.hpp"
#include "tuner/problem/axes.hpp"
#include "tuner/search/plan.hpp"

using namespace moe::tuner;

using moe::testing::error_of;

TEST(Axes, ListsAndRangesOfPowersOfTwo) {
  EXPECT_EQ(axis_values("--experts", "64,128,256,384", true), (std::vector<std::string>{"64", "128", "256", "384"}));
  EXPECT_EQ(axis_values("--topk", "2-8", true), (std::vector<std::string>{"2", "4", "8"}));
  EXPECT_EQ(axis_values("--topk", "1-5,6", true), (std::vector<std::string>{"1", "2", "4", "6"}));
  EXPECT_EQ(axis_values("--expert_end", "-1", true), (std::vector<std::string>{"-1"}));  // negative, not a range
  EXPECT_EQ(axis_values("--dtype", "bf16,f16", false), (std::vector<std::string>{"bf16", "f16"}));
  EXPECT_NE(error_of([] { axis_values("--experts", "64,,128", true); }).find("empty item"), std::string::npos);
  EXPECT_NE(error_of([] { axis_values("--experts", "64,", true); }).find("empty item"), std::string::npos);
  EXPECT_NE(error_of([] { axis_values("--experts", "6x4", true); }).find("'6x4' is not an integer"), std::string::npos);
  EXPECT_NE(error_of([] { axis_values("--topk", "8-2", true); }).find("is empty"), std::string::npos);
}

TEST(Axes, TokenCountsAreBoundedBeforeRangesExpand) {
  EXPECT_EQ(parse_token_list("1-64"), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(parse_token_list("1,2,4"), (std::vector<std::int64_t>{1, 2, 4}));
  EXPECT_EQ(parse_token_list("default").size(), 20u);
  EXPECT_NE(error_of([] { parse_token_list("-5"); }).find("'-5' is not a positive integer"), std::string::npos);
  EXPECT_NE(error_of([] { parse_token_list("1,,16"); }).find("empty item"), std::string::npos);
  EXPECT_NE(error_of([] { parse_token_list("99999999999"); }).find("limit of 2147483648"), std::string::npos);
  EXPECT_EQ(parse_token_list("2147483648"), (std::vector<std::int64_t>{kMaxAxisInt}));
  // An upper end near 2^62 once doubled past the integer's end and never stopped.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([] { parse_token_list("1-4611686018427387904"); }).find("above the limit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_token_list("1-99999999999999999999"); }).find("too large"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Axes, CrossProductAndZip) {
  const std::vector<Axis> axes = {{"experts", {"64", "128", "256"}}, {"topk", {"4", "8", "8"}}, {"dtype", {"bf16", "f16"}}};
  const auto all = expand_axes(axes, {});
  ASSERT_EQ(all.size(), 18u);
  std::set<std::string> distinct;
  for (auto& c : all) distinct.insert(axes_text(c));
  EXPECT_EQ(distinct.size(), 3u * 2 * 2);  // topk 8 is given twice: those combinations come twice
  EXPECT_EQ(axes_text(all.front()), "experts=64,topk=4,dtype=bf16");
  EXPECT_EQ(axes_text(all[1]), "experts=64,topk=4,dtype=f16");  // the last axis varies fastest
  const auto zipped = expand_axes(axes, {{"experts", "topk"}});
  ASSERT_EQ(zipped.size(), 6u);
  EXPECT_EQ(axes_text(zipped[0]), "experts=64,topk=4,dtype=bf16");
  EXPECT_EQ(axes_text(zipped[2]), "experts=128,topk=8,dtype=bf16");
  EXPECT_EQ(axes_text(zipped[5]), "experts=256,topk=8,dtype=f16");
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"experts", "dtype"}}); }).find("differ in length"), std::string::npos);
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"experts", "groups"}}); }).find("--zip groups"), std::string::npos);
  // Names are said as flags (hf-config, not hf_config); a flag's own dashes are pointed out.
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"experts", "hf_config"}}); }).find("--zip hf-config: not a list"),
            std::string::npos);
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"__hf_config", "topk"}}); }).find("--zip hf-config: name the flags without their dashes"),
            std::string::npos);
  // A list named twice, in one group or in two, is refused: pairing it with itself pairs nothing.
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"experts", "experts"}}); }).find("--zip names experts twice"), std::string::npos);
  EXPECT_NE(error_of([&] { expand_axes(axes, {{"experts", "topk"}, {"topk", "experts"}}); }).find("twice"), std::string::npos);
}

// A unit whose combination is no problem has every point skipped with the reason, marked as an
// invalid problem (not a failure), under a key of its own.
TEST(Axes, InvalidCombinationsAreSkippedInThePlan) {
  const moe::FamilyDesc& router = moe::family("router");
  if (!router.backend(moe::Backend::cpu)) GTEST_SKIP() << "no cpu router in this build";
  auto problem = [&](std::int64_t experts) {
    return moe::complete(router.problem_params, moe::Params{{"experts", experts}, {"groups", std::int64_t{8}}, {"topk_group", std::int64_t{8}}, {"topk", std::int64_t{2}}, {"tokens", std::int64_t{1}}}, "router");
  };
  std::vector<SweepUnit> units;
  for (std::int64_t e : {8, 12, 16}) {
    moe::Params p = problem(e);
    p.erase("tokens");
    units.push_back({&router, p, {{"experts", std::to_string(e)}}, {}, {}});
  }
  units.push_back({&router, {}, {{"experts", "24"}}, "--ep 5 does not divide the 24 routed experts", {}});
  const Plan plan = make_plan(units, {1, 16}, moe::Backend::cpu, moe::cpu_device_info(1), "default");
  ASSERT_EQ(plan.points.size(), 8u);
  std::set<std::string> keys;
  for (const PlanPoint& p : plan.points) {
    keys.insert(p.key);
    const bool bad = p.axes.front().second == "12" || p.axes.front().second == "24";
    EXPECT_EQ(p.invalid_problem, bad) << p.key;
    EXPECT_EQ(p.candidates.empty(), bad) << p.key;
    if (p.axes.front().second == "12") EXPECT_NE(p.skip.find("12"), std::string::npos) << p.skip;
    if (p.axes.front().second == "24") EXPECT_NE(p.skip.find("--ep 5"), std::string::npos) << p.skip;
    EXPECT_NE(p.label.find("experts=" + p.axes.front().second), std::string::npos) << p.label;
  }
  EXPECT_EQ(keys.size(), 8u);
}

// `sweep all --rsf 1,2`: dispatch's problem is the same for both values; it is tuned once, and
// its points do not claim an rsf they do not depend on.
TEST(Axes, RepeatedUnitsAreTunedOnce) {
  const moe::FamilyDesc& f = moe::family("dispatch");
  const moe::Params a{{"experts", std::int64_t{64}}}, b{{"experts", std::int64_t{128}}};
  std::vector<SweepUnit> units = {{&f, a, {{"experts", "64"}, {"rsf", "1"}}, {}, {}},
                                  {&f, b, {{"experts", "128"}, {"rsf", "1"}}, {}, {}},
                                  {&f, a, {{"experts", "64"}, {"rsf", "2"}}, {}, {}},
                                  {&f, b, {{"experts", "128"}, {"rsf", "2"}}, {}, {}},
                                  {&f, {}, {{"experts", "12"}, {"rsf", "2"}}, "no problem", {}}};
  const auto out = merge_repeated_units(units);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(axes_text(out[0].axes), "experts=64");
  EXPECT_EQ(axes_text(out[1].axes), "experts=128");
  EXPECT_EQ(out[2].skip, "no problem");
}

namespace {

std::vector<std::string> numbers(int n) {
  std::vector<std::string> v;
  for (int i = 1; i <= n; ++i) v.push_back(std::to_string(i));
  return v;
}

}  // namespace

// 4096 experts x 64 topk once expanded all 262,144 combinations before anything looked at them
// (a hang in --dry-run, SIGABRT without). The count comes first and is a product of lengths.
TEST(Axes, AnExplosionIsRefusedByItsCountBeforeAnythingExpands) {
  const std::vector<Axis> wide = {{"experts", numbers(4096)}, {"topk", numbers(64)}};
  EXPECT_EQ(count_combinations(wide, {}), 262144u);
  const std::string msg = error_of([&] { expand_axes(wide, {}); });
  EXPECT_NE(msg.find("262144 combinations"), std::string::npos) << msg;
  EXPECT_NE(msg.find("experts 4096 x topk 64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("limit of " + std::to_string(kMaxCombinations)), std::string::npos) << msg;
  EXPECT_NE(msg.find("--zip"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fewer values"), std::string::npos) << msg;

  // Ten axes of 1000 values: 10^30 combinations, which no expansion could even hold.
  std::vector<Axis> huge;
  for (int i = 0; i < 10; ++i) huge.push_back({"p" + std::to_string(i), numbers(1000)});
  EXPECT_EQ(count_combinations(huge, {}), UINT64_MAX);
  EXPECT_NE(error_of([&] { expand_axes(huge, {}); }).find("2^64 or more combinations"), std::string::npos);

  // The limit itself is allowed, and a zip counts as one axis.
  EXPECT_EQ(expand_axes({{"experts", numbers(64)}, {"topk", numbers(64)}}, {}).size(), kMaxCombinations);
  const std::vector<Axis> paired = {{"experts", numbers(4096)}, {"topk", numbers(4096)}};
  EXPECT_EQ(count_combinations(paired, {{"experts", "topk"}}), 4096u);
  EXPECT_EQ(expand_axes(paired, {{"experts", "topk"}}).size(), 4096u);
  EXPECT_NE(error_of([&] { expand_axes(paired, {{"experts", "topk"}, {"experts", "topk"}}); }).find("twice"), std::string::npos);
}
