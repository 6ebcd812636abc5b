// Ours beside the peers: a sweep whose space holds configs the backend's peer hook names (a
// stand-in for cuBLAS or an engine's kernel) puts the best of ours beside the best peer per
// point, in the journal, results.json, summary.md and compare; a sweep without peers says
// "no peer measured"; the tables never name a config runtime dispatch cannot call.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "moe/error.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/run/runner.hpp"
#include "tuner/run/worker.hpp"
#include "tuner/store/compare.hpp"
#include "tuner/store/journal.hpp"
#include "tuner/store/report.hpp"
#include "tuner/store/results.hpp"
#include "tuner/store/side_by_side.hpp"
#include "tuner/store/tables.hpp"
#include "tuner_scale_family.hpp"
#include "tuner_sweep_helpers.hpp"

using namespace moe::tuner;
using namespace moe::testing::sweeps;
namespace fs = std::filesystem;

namespace {

// The scale family whose tile-64 config is "FakeBLAS"'s kernel and tile-256 "FakeEngine"'s.
const moe::FamilyDesc& peer_family() {
  static const moe::FamilyDesc d = [] {
    moe::FamilyDesc f = moe::testing::scale_family();
    f.name = "scale_peers";
    f.backends.at(0).peer = [](const moe::Params& c) -> std::string {
      return c.i("tile") == 64 ? "FakeBLAS" : c.i("tile") == 256 ? "FakeEngine" : "";
    };
    return f;
  }();
  return d;
}

const FamilyResolver& peer_families() {
  static const FamilyResolver r = [](const std::string& n) -> const moe::FamilyDesc& {
    return n == "scale_peers" ? peer_family() : moe::testing::test_families()(n);
  };
  return r;
}

SweepOptions peer_options(const fs::path& d) {
  const moe::Params problem =
      moe::complete(peer_family().problem_params, moe::Params{{"width", std::int64_t{512}}}, "scale_peers");
  SweepOptions o = options(d, problem, {8, 32});
  o.units = {{&peer_family(), problem}};
  o.launch.in_process = [](int in, int outfd) { return worker_main(in, outfd, peer_families()); };
  return o;
}

double median(const json& r) { return r["stats"]["median_us"].get<double>(); }

}  // namespace

TEST(SideBySide, SweepPutsTheBestOfOursBesideTheBestPeer) {
  const fs::path d = moe::testing::fresh_temp_dir("side-by-side");
  const SweepOutcome out = run_sweep(peer_options(d));
  const json res = read_results(d.string());
  ASSERT_EQ(res["points"].size(), 2u);
  for (auto& p : res["points"]) {
    // The expected pair from the point's records: the fastest ok one of ours, of the peers'.
    const json *ours = nullptr, *peer = nullptr;
    for (auto& r : res["records"]) {
      if (r["tokens"] != p["tokens"] || r["status"] != "ok") continue;
      const std::int64_t tile = r["config"]["tile"].get<std::int64_t>();
      const std::string named = r.value("peer", "");
      EXPECT_EQ(named, tile == 64 ? "FakeBLAS" : tile == 256 ? "FakeEngine" : "") << r.dump();
      const json*& best = named.empty() ? ours : peer;
      if (!best || median(r) < median(*best)) best = &r;
    }
    ASSERT_TRUE(ours && peer);
    const json& s = p.at("side_by_side");
    EXPECT_EQ(s["ours"]["config_key"], (*ours)["config_key"]) << s.dump();
    EXPECT_EQ(s["peer"]["config_key"], (*peer)["config_key"]) << s.dump();
    EXPECT_EQ(s["peer"]["name"], (*peer)["peer"]) << s.dump();
    EXPECT_DOUBLE_EQ(s["peer_over_ours"].get<double>(), median(*peer) / median(*ours)) << s.dump();
    EXPECT_FALSE(s.contains("note")) << s.dump();
    // The row of the summary: the peer's name, both configs and the ratio.
    const std::string row = fmt::format("| {} | {} | {:.3f} | {} | {} | {:.3f} | {:.2f}x |", p["tokens"].get<int>(),
                                        (*ours)["config_key"].get<std::string>(), median(*ours),
                                        (*peer)["peer"].get<std::string>(), (*peer)["config_key"].get<std::string>(),
                                        median(*peer), median(*peer) / median(*ours));
    EXPECT_NE(out.summary_md.find(row), std::string::npos) << row << "\n" << out.summary_md;
  }
  EXPECT_NE(out.summary_md.find("peer us / ours us: above 1 ours is faster"), std::string::npos) << out.summary_md;
  // The journal carries the peer's name on its eval lines, and only on theirs.
  const JournalContents j = read_journal((d / "journal.jsonl").string());
  int named = 0;
  for (auto& l : j.lines) {
    if (l.value("type", "") != "eval") continue;
    const std::int64_t tile = l["config"]["tile"].get<std::int64_t>();
    EXPECT_EQ(l.value("peer", ""), tile == 64 ? "FakeBLAS" : tile == 256 ? "FakeEngine" : "") << l.dump();
    named += l.contains("peer");
  }
  EXPECT_GT(named, 0);
  // Both in-library (the cpu backend): the tables may ship a peer's config when it is fastest.
  for (auto& p : res["points"]) EXPECT_FALSE(p.contains("fastest_not_dispatchable")) << p.dump();
  // compare shows the ratios where both files have them.
  const CompareReport rep = compare_results(res, res, 0.05);
  ASSERT_EQ(rep.peers.size(), 2u);
  EXPECT_DOUBLE_EQ(rep.peers[0].base_ratio, res["points"][0]["side_by_side"]["peer_over_ours"].get<double>());
  const std::string md = compare_markdown(rep, 0.05);
  EXPECT_NE(md.find("| best peer | base | new |"), std::string::npos) << md;
  fs::remove_all(d);
}

TEST(SideBySide, ASweepWithoutPeersSaysNoPeerMeasured) {
  const fs::path d = moe::testing::fresh_temp_dir("side-by-side-none");
  const SweepOutcome out = run_sweep(options(d, scale_problem(512), {8}));
  const json res = read_results(d.string());
  ASSERT_EQ(res["points"].size(), 1u);
  const json& s = res["points"][0].at("side_by_side");
  EXPECT_EQ(s["note"], "no peer measured") << s.dump();
  EXPECT_TRUE(s["peer"].is_null());
  EXPECT_TRUE(s["peer_over_ours"].is_null());
  EXPECT_TRUE(s["ours"].is_object());
  EXPECT_NE(out.summary_md.find("no peer measured"), std::string::npos) << out.summary_md;
  for (auto& r : res["records"]) EXPECT_FALSE(r.contains("peer")) << r.dump();
  // Nothing to put side by side in compare either.
  EXPECT_TRUE(compare_results(res, res, 0.05).peers.empty());
  EXPECT_EQ(compare_markdown(compare_results(res, res, 0.05), 0.05).find("best peer"), std::string::npos);
  fs::remove_all(d);
}

namespace {

// A journal as a cuda sweep with an engine's peer would leave it: ours (the default) at 10 us,
// an in-library vendor kernel at 8 us, an engine's kernel run by another backend at 5 us, the
// engine's the search's winner.
JournalContents engine_journal() {
  JournalContents j;
  j.header = {{"type", "header"}, {"schema", kJournalSchema}, {"backend", "cuda"}, {"device", "Test GPU"}};
  const auto eval = [](int cand, int tile, const char* peer, const char* backend, double us) {
    json l = {{"type", "eval"},        {"point", "scale/p"}, {"point_index", 0},       {"kernel", "scale"},
              {"problem_key", "p"},    {"tokens", 8},        {"cand_index", cand},      {"config", {{"tile", tile}}},
              {"config_key", "tile=" + std::to_string(tile)}, {"is_default", cand == 0}, {"round", 0},
              {"status", "ok"},        {"timer", "cupti"},   {"validation", {{"ok", true}}},
              {"samples_us", {us, us * 1.01, us * 0.99}}};
    if (peer) l["peer"] = peer;
    if (backend) l["backend"] = backend;
    return l;
  };
  j.lines.push_back(eval(0, 16, nullptr, nullptr, 10));
  j.lines.push_back(eval(1, 64, "cuBLAS", nullptr, 8));
  j.lines.push_back(eval(2, 256, "vLLM Triton", "vllm", 5));
  j.lines.push_back({{"type", "point"}, {"point", "scale/p"}, {"point_index", 0}, {"kernel", "scale"},
                     {"problem_key", "p"}, {"tokens", 8}, {"evaluated", 3}, {"total", 3}, {"rounds", 1},
                     {"winner", "tile=256"}, {"runner_up", "tile=64"}, {"default", "tile=16"}});
  return j;
}

}  // namespace

TEST(SideBySide, TablesShipTheFastestConfigRuntimeDispatchCanCall) {
  const json res = build_results(engine_journal(), {{"backend", "cuda"}, {"device", "Test GPU"}, {"device_slug", "test-gpu"}});
  const json& p = res["points"][0];
  // The engine's kernel is the best peer, so the ratio is against it ...
  EXPECT_EQ(p["side_by_side"]["peer"]["name"], "vLLM Triton") << p.dump();
  EXPECT_EQ(p["side_by_side"]["peer"]["backend"], "vllm") << p.dump();
  EXPECT_DOUBLE_EQ(p["side_by_side"]["peer_over_ours"].get<double>(), 0.5) << p.dump();
  // ... but runtime dispatch cannot call it: the in-library vendor kernel is the choice, and the
  // faster one is named beside it.
  EXPECT_EQ(p["chosen"]["config_key"], "tile=64") << p.dump();
  EXPECT_EQ(p["chosen"]["peer"], "cuBLAS") << p.dump();
  EXPECT_EQ(p["runner_up"]["config_key"], "tile=16") << p.dump();
  EXPECT_EQ(p["fastest_not_dispatchable"]["config_key"], "tile=256") << p.dump();
  EXPECT_EQ(p["winner"]["config_key"], "tile=256") << p.dump();
  const std::string md = markdown_summary(res);
  EXPECT_NE(md.find("tile=64 [cuBLAS] (faster: tile=256 [vLLM Triton] at 5.000 us, which runtime dispatch cannot call)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 8 | tile=16 | 10.000 | vLLM Triton | tile=256 | 5.000 | 0.50x |"), std::string::npos) << md;
  const fs::path d = moe::testing::fresh_temp_dir("side-by-side-tables");
  const auto written = write_tables(res, (d / "tables").string());
  ASSERT_EQ(written.size(), 1u);
  const json table = json::parse(moe::testing::slurp(written[0]));
  EXPECT_EQ(table["entries"]["8"]["config"]["tile"], 64) << table.dump();
  EXPECT_EQ(table["entries"]["8"]["runner_up"]["config"]["tile"], 16) << table.dump();
  fs::remove_all(d);
}

TEST(SideBySide, WrongTypesOfTheNewFieldsAreOneErrorLine) {
  const fs::path d = moe::testing::fresh_temp_dir("side-by-side-types");
  const json good = build_results(engine_journal(), {{"backend", "cuda"}, {"device", "Test GPU"}});
  const auto refused = [&](json doc, const std::string& field) {
    const fs::path f = d / "results.json";
    write_results(f.string(), doc);
    try {
      read_results(f.string());
    } catch (const moe::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(field), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return true;
    }
    return false;
  };
  EXPECT_FALSE(refused(good, ""));  // as written it reads
  json bad = good;
  bad["records"][1]["peer"] = 7;
  EXPECT_TRUE(refused(bad, "record 1: peer is 7, not a string"));
  bad = good;
  bad["points"][0]["side_by_side"] = "x";
  EXPECT_TRUE(refused(bad, "point 0: side_by_side is \"x\""));
  bad = good;
  bad["points"][0]["side_by_side"]["peer_over_ours"] = "0.5";
  EXPECT_TRUE(refused(bad, "side_by_side"));
  bad = good;
  bad["points"][0]["side_by_side"]["peer"]["name"] = 3;
  EXPECT_TRUE(refused(bad, "side_by_side"));
  bad = good;
  bad["points"][0]["chosen"]["peer"] = json::array();
  EXPECT_TRUE(refused(bad, "point 0: chosen"));
  // Files written before the fields existed still read.
  json old = good;
  for (auto& r : old["records"]) r.erase("peer");
  for (auto& p : old["points"]) {
    p.erase("side_by_side");
    p.erase("fastest_not_dispatchable");
    for (const char* k : {"winner", "chosen", "runner_up", "default"})
      if (p.contains(k)) p[k].erase("peer");
  }
  EXPECT_FALSE(refused(old, ""));
  EXPECT_NE(markdown_summary(old).find("no peer measured"), std::string::npos);
  // A journal line's peer of another type, through the binary: one error line, exit 2.
  fs::create_directories(d / "sweep");
  std::ofstream(d / "sweep" / "journal.jsonl")
      << json({{"type", "header"}, {"schema", kJournalSchema}}).dump() << "\n"
      << json({{"type", "eval"}, {"point", "x"}, {"peer", 5}}).dump() << "\n";
  const auto r = moe::testing::sh(std::string(MOEBENCH_EXE) + " merge " + moe::testing::quote(d / "sweep") + " --out " +
                                  moe::testing::quote(d / "merged") + " --tables none");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("line 2: peer is 5, not a string"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  fs::remove_all(d);
}
