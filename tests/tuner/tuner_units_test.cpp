#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/emu_backend.hpp"
#include "moe/error.hpp"
#include "moe/cuda_device.hpp"
#include "moe/family.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/search/layer_units.hpp"
#include "tuner/search/plan.hpp"
#include "tuner/problem/problem.hpp"
#include "tuner/measure/timer_cpu.hpp"
#include "tuner/measure/timer_sizing.hpp"
#include "tuner/base/units.hpp"

using namespace moe::tuner;

TEST(TunerUnits, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration("90s", "--x"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("10m", "--x"), 600);
  EXPECT_DOUBLE_EQ(parse_duration("1h", "--x"), 3600);
  EXPECT_DOUBLE_EQ(parse_duration("250ms", "--x"), 0.25);
  EXPECT_DOUBLE_EQ(parse_duration("2.5", "--x"), 2.5);
  EXPECT_THROW(parse_duration("ten", "--x"), moe::Error);
  EXPECT_THROW(parse_duration("-1s", "--x"), moe::Error);
}

TEST(TunerUnits, FractionsBudgetsShards) {
  EXPECT_DOUBLE_EQ(parse_fraction("5%", "--t"), 0.05);
  EXPECT_DOUBLE_EQ(parse_fraction("0.2", "--t"), 0.2);
  EXPECT_THROW(parse_fraction("five", "--t"), moe::Error);
  EXPECT_EQ(parse_budget("40").candidates, 40);
  EXPECT_DOUBLE_EQ(parse_budget("10m").seconds, 600);
  EXPECT_EQ(parse_budget("").candidates, 0);
  EXPECT_THROW(parse_budget("0"), moe::Error);
  EXPECT_THROW(parse_budget("lots"), moe::Error);
  // Read whole: a count past int's range is refused, not wrapped into a small one.
  EXPECT_EQ(parse_budget("0040").candidates, 40);
  EXPECT_EQ(parse_budget("1000000").candidates, 1000000);
  for (const char* big : {"1000001", "4294967337", "99999999999", "000000000000000000007000000"}) {
    try {
      parse_budget(big);
      ADD_FAILURE() << big << " was accepted";
    } catch (const moe::Error& e) {
      EXPECT_NE(std::string(e.what()).find("at most 1000000 candidates"), std::string::npos) << e.what();
    }
  }
  const Shard s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "/2"}) EXPECT_THROW(parse_shard(bad), moe::Error) << bad;
}

// Values past an int were cast down (4294967296/4294967297 ran as 0/1), and a huge count sized a
// vector of that many shards (0/1000000000: 8 GB): both are refused with the accepted range.
TEST(TunerUnits, ShardValuesAreRangeCheckedNotWrapped) {
  const Shard last = parse_shard("65535/65536");
  EXPECT_EQ(last.index, 65535);
  EXPECT_EQ(last.count, kMaxShards);
  const auto error_of = [](const std::string& text) {
    try {
      parse_shard(text);
    } catch (const moe::Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  for (const char* bad : {"4294967296/4294967297", "1/4294967298", "0/1000000000", "0/65537", "0/99999999999999999999999"})
    EXPECT_NE(error_of(bad).find("at most 65536 shards"), std::string::npos) << bad << ": " << error_of(bad);
  for (const char* bad : {"4294967297/2", " 1/2", "+1/2", "1/+2", "-0/2", "1/ 2", "1/2 ", "0x1/2", "1//2", "0/1/2"})
    EXPECT_NE(error_of(bad).find("is not i/n"), std::string::npos) << bad << ": " << error_of(bad);
}

// Loads of each shard under shard_points, in point order of `costs`.
std::vector<double> shard_loads(const std::vector<double>& costs, int count) {
  std::vector<double> load(count, 0.0);
  for (int i = 0; i < count; ++i)
    for (int p : shard_points(costs, i, count)) load[i] += costs[p];
  return load;
}

TEST(TunerShard, PartitionIsDisjointCompleteAndBalancedByCost) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> size(0.0, 2.5);  // point costs spanning decades
  for (int n : {0, 1, 7, 40, 61})
    for (int count : {1, 2, 3, 8}) {
      std::vector<double> costs(n);
      for (auto& c : costs) c = size(rng);
      std::vector<int> seen(n, 0);
      for (int i = 0; i < count; ++i) {
        const std::vector<int> mine = shard_points(costs, i, count);
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
        for (int p : mine) {
          ASSERT_GE(p, 0);
          ASSERT_LT(p, n);
          ++seen[p];
        }
        EXPECT_EQ(mine, shard_points(costs, i, count)) << "deterministic";
      }
      for (int p = 0; p < n; ++p) EXPECT_EQ(seen[p], 1) << "point " << p << " of " << n << " in " << count << " shards";
      const std::vector<double> load = shard_loads(costs, count);
      const double biggest = n ? *std::max_element(costs.begin(), costs.end()) : 0.0;
      EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()), biggest + 1e-9)
          << n << " points in " << count << " shards";
    }
  // Points of equal cost (those that cannot run cost 0) are dealt out, not piled on shard 0.
  const std::vector<double> zeros(9, 0.0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(shard_points(zeros, i, 3).size(), 3u);
  EXPECT_THROW(shard_points(zeros, 3, 3), moe::Error);
}

// The new user's case: `sweep all --tokens 1,4096 --shard i/2` gave shard 0 every T=1 point.
TEST(TunerShard, RealSweepPointsSplitIntoEqualHalves) {
  const moe::Params model = load_model("qwen3-30b-a3b");
  std::vector<SweepUnit> units;
  for (const char* name : {"router", "dispatch", "gmm", "combine"})
    units.push_back({&moe::family(name), problem_for(moe::family(name), model, {}, false), {}});
  const moe::DeviceInfo dev = moe::cpu_device_info(1);
  const Plan plan = make_plan(units, {1, 4096}, moe::Backend::cpu, dev, "default");
  std::vector<double> costs;
  for (const PlanPoint& p : plan.points) {
    EXPECT_GT(p.estimate_s, 0) << p.key;
    costs.push_back(p.estimate_s);
  }
  // A large point is expected to cost more than the same family's small one.
  for (std::size_t i = 0; i + 1 < plan.points.size(); i += 2)
    EXPECT_GT(costs[i + 1], costs[i]) << plan.points[i + 1].key;
  for (int i = 0; i < 2; ++i) {
    int large = 0;
    for (int p : shard_points(costs, i, 2)) large += plan.points[p].tokens == 4096;
    EXPECT_GE(large, 1) << "shard " << i << " got no large point";
  }
  const std::vector<double> load = shard_loads(costs, 2);
  EXPECT_LE(std::abs(load[0] - load[1]), *std::max_element(costs.begin(), costs.end()));
}

TEST(TunerShard, EmuPointsCostTheirEmulationNotHostRates) {
  // `sweep --backend emu --dry-run` said ~9 s for qwen3's gmm at T=1,4, where each of its 64
  // candidates emulates for seconds: an emu point costs its candidates' emulation time.
  const moe::Params model = load_model("qwen3-30b-a3b");
  const moe::FamilyDesc& gmm = moe::family("gmm");
  const std::vector<SweepUnit> units{{&gmm, problem_for(gmm, model, {}, false), {}}};
  const Plan emu = make_plan(units, {1}, moe::Backend::emu, moe::emu_device_info(), "default");
  const Plan cpu = make_plan(units, {1}, moe::Backend::cpu, moe::cpu_device_info(1), "default");
  ASSERT_EQ(emu.points.size(), 1u);
  const PlanPoint& p = emu.points[0];
  const double each = moe::emu_seconds(gmm, p.problem);
  ASSERT_GT(each, 1.0);  // 50 MFLOP at a few MFLOP/s
  EXPECT_GE(p.estimate_s, each * static_cast<double>(p.candidates.size()));
  EXPECT_GT(p.estimate_s, 10 * cpu.points[0].estimate_s);
}

TEST(TunerCudaSizing, L2FlushIsTwiceTheCache) {
  EXPECT_EQ(l2_flush_bytes(std::size_t{50} << 20), std::size_t{100} << 20);  // H100: 50 MiB L2
  EXPECT_EQ(l2_flush_bytes(0), std::size_t{64} << 20);                      // unknown size
  EXPECT_EQ(l2_flush_bytes(std::size_t{4} << 30), std::size_t{1} << 30);     // capped
}

TEST(TunerCudaSizing, GraphBatch) {
  EXPECT_EQ(graph_batch_size(5.0), 100);     // 500 us of 5 us calls
  EXPECT_EQ(graph_batch_size(1000.0), 1);    // one long call is enough
  EXPECT_EQ(graph_batch_size(0.1), 200);     // capped
  EXPECT_EQ(graph_batch_size(0.0), 200);     // unknown: the cap
  EXPECT_EQ(graph_batch_size(NAN), 200);
  EXPECT_EQ(graph_batch_size(3.0, 10.0, 50), 4);
  EXPECT_EQ(graph_batch_size(3.0, 10.0, 0), 1);
}

TEST(TunerCudaSizing, CopyProbeAndModes) {
  EXPECT_EQ(copy_probe_bytes(std::size_t{80} << 30), std::size_t{256} << 20);
  EXPECT_EQ(copy_probe_bytes(std::size_t{1} << 30), std::size_t{128} << 20);
  EXPECT_EQ(copy_probe_bytes(0), std::size_t{256} << 20);
  EXPECT_EQ(copy_probe_bytes(1024), std::size_t{1} << 20);
  EXPECT_EQ(parse_timer_mode("cold"), TimerMode::cold);
  EXPECT_EQ(parse_timer_mode("hot"), TimerMode::hot);
  EXPECT_THROW(parse_timer_mode("warm"), moe::Error);
}

TEST(TunerCpuTimer, BatchSizing) {
  EXPECT_EQ(cpu_batch_size(40.0), 1);
  EXPECT_EQ(cpu_batch_size(2.0), 10);
  EXPECT_EQ(cpu_batch_size(0.001), 1000);
  EXPECT_GT(host_copy_bandwidth_gbps(std::size_t{8} << 20, 2), 0.1);
}

// The layer tunes gmm twice; "done gmm T=1" twice told a user nothing about which stage ended.
TEST(TunerPlan, LayerPointLabelsNameTheGmmStage) {
  std::vector<std::string> warnings;
  const moe::Params layer = problem_for(moe::family("moe-layer"), load_model("qwen3-30b-a3b"), {}, false);
  const moe::DeviceInfo dev = moe::cpu_device_info(1);
  const Plan plan = make_plan(layer_units(layer, {}, moe::Backend::cpu, warnings), {1}, moe::Backend::cpu, dev, "default");
  std::vector<std::string> labels;
  for (const PlanPoint& p : plan.points) labels.push_back(p.label);
  EXPECT_NE(std::find(labels.begin(), labels.end(), "gmm up T=1"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "gmm down T=1"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "router T=1"), labels.end());
}
