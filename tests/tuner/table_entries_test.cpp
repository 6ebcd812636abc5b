// A sweep merges its entries into a table's in O(n log n) key comparisons, keeping every entry
// as written; the bound is on comparisons counted, never on time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "tuner/store/table_entries.hpp"

using moe::tuner::TableEntries;
using ojson = nlohmann::ordered_json;

namespace {

std::string table_text(const std::string& entries) {
  return R"({"schema": "moebench/config-table@1", "kernel": "router", "problem": {"entries": 3, "schema": "x"},
             "entries": )" + entries + R"(, "provenance": {"written": "now"}})";
}

// n entries keyed 1..n, as a table that sweeps wrote holds them (in numeric order).
std::string big_table(std::int64_t n) {
  std::string e = "{";
  for (std::int64_t t = 1; t <= n; ++t) {
    if (t > 1) e += ",";
    e += "\"" + std::to_string(t) + "\": {\"config\": {\"rows_per_task\": " + std::to_string(t % 64 + 1) +
         "}, \"median_us\": " + std::to_string(t) + ".5}";
  }
  return table_text(e + "}");
}

}  // namespace

TEST(TableEntries, MergingIntoAHundredThousandEntriesTakesLinearlyManyComparisons) {
  constexpr std::int64_t n = 100'000, p = 1'000;
  TableEntries entries;
  ASSERT_EQ(entries.read(big_table(n)), "");
  EXPECT_EQ(entries.size(), static_cast<std::size_t>(n));
  const std::uint64_t reading = entries.comparisons();
  EXPECT_LE(reading, 5 * static_cast<std::uint64_t>(n));  // in order: a few per key, never a search
  std::mt19937_64 g(5);
  std::uniform_int_distribution<std::int64_t> any(1, 2 * n);
  for (std::int64_t i = 0; i < p; ++i) entries.put(any(g), ojson{{"config", ojson::object()}, {"median_us", 1.0}});
  EXPECT_LE(entries.comparisons() - reading, static_cast<std::uint64_t>(p) * 2 * 19);  // log2(2e5) < 18
  const ojson merged = entries.take_json();
  EXPECT_GE(merged.size(), static_cast<std::size_t>(n));
  // Numeric order, as written: 1, 2, ..., 9, 10, ... (not "1", "10", "100").
  std::int64_t last = 0;
  for (auto& [k, v] : merged.items()) {
    const std::int64_t t = std::stoll(k);
    ASSERT_GT(t, last);
    last = t;
  }
}

TEST(TableEntries, KeysOutOfOrderAreSortedAndLaterOnesReplaceEarlier) {
  TableEntries entries;
  ASSERT_EQ(entries.read(table_text(R"({"64": {"b": 1, "a": [1, {"z": 2, "y": null}]}, "8": {"config": {}},
                                        "1000": {"x": true}, "8": {"median_us": 2.5}})")),
            "");
  entries.put(64, ojson{{"new", 1}});
  entries.put(9, ojson{{"nine", 9}});
  const ojson j = entries.take_json();
  EXPECT_EQ(j.dump(), R"({"8":{"median_us":2.5},"9":{"nine":9},"64":{"new":1},"1000":{"x":true}})");
  // An entry's own fields keep the order they were written in.
  TableEntries kept;
  ASSERT_EQ(kept.read(table_text(R"({"5": {"median_us": 1, "config": {"tile": 4, "behave": "x"}, "a": [3, 2]}})")), "");
  EXPECT_EQ(kept.take_json().dump(), R"({"5":{"median_us":1,"config":{"tile":4,"behave":"x"},"a":[3,2]}})");
}

TEST(TableEntries, WhatIsNoTableSaysWhy) {
  TableEntries e;
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": {"12abc": {}}})"),
            "has an entry keyed '12abc', which is not a token count");
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": {"12": 5}})"),
            "has an entry keyed '12' that is not an object");
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": {"12": [1]}})"),
            "has an entry keyed '12' that is not an object");
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": []})"), "has no entries object");
  EXPECT_EQ(e.read(R"({"schema": "other", "entries": {}})"), "is not a moebench/config-table@1 table");
  EXPECT_EQ(e.read(R"([1, 2])"), "is not a moebench/config-table@1 table");
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": {"1": {}})").rfind("is not valid JSON (", 0), 0u);
  EXPECT_EQ(e.read(R"({"schema": "moebench/config-table@1", "entries": {"1": {}}} trailing)").rfind("is not valid JSON", 0),
            0u);
  EXPECT_EQ(e.size(), 0u);
  // The root's own "schema" counts, not one nested deeper.
  EXPECT_EQ(e.read(R"({"p": {"schema": "moebench/config-table@1"}, "schema": "x", "entries": {}})"),
            "is not a moebench/config-table@1 table");
  EXPECT_EQ(e.read(R"({"entries": {"2": {}}, "schema": "moebench/config-table@1"})"), "");
  EXPECT_EQ(e.size(), 1u);
}
