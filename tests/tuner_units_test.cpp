#include <gtest/gtest.h>

#include <cmath>

#include "moe/error.hpp"
#include "tuner/plan.hpp"
#include "tuner/timer_cpu.hpp"
#include "tuner/timer_sizing.hpp"
#include "tuner/units.hpp"

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
  const Shard s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "/2"}) EXPECT_THROW(parse_shard(bad), moe::Error) << bad;
}

TEST(TunerShard, PartitionIsDisjointAndComplete) {
  for (int n : {0, 1, 7, 40, 61})
    for (int count : {1, 2, 3, 8}) {
      std::vector<int> seen(n, 0);
      for (int i = 0; i < count; ++i)
        for (int p : shard_points(n, i, count)) {
          ASSERT_GE(p, 0);
          ASSERT_LT(p, n);
          ++seen[p];
        }
      for (int p = 0; p < n; ++p) EXPECT_EQ(seen[p], 1) << "point " << p << " of " << n << " in " << count << " shards";
      // Deterministic and balanced.
      EXPECT_EQ(shard_points(n, 0, count), shard_points(n, 0, count));
      if (n >= count) {
        EXPECT_LE(shard_points(n, 0, count).size() - shard_points(n, count - 1, count).size(), 1u);
      }
    }
  EXPECT_THROW(shard_points(5, 3, 3), moe::Error);
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
