// scripts/kernel_report.py: the static report of the built kernels and its CI gate. The gate runs
// on this build against the committed baseline (results/static/sm90a.json); the gate itself is
// tested on doctored copies of that baseline, each of which must fail it for its own reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <set>
#include <string>

#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/json_io.hpp"

namespace fs = std::filesystem;
using moe::testing::Proc;
using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;
using moe::tuner::json;

namespace {

const fs::path kSource = MOEBENCH_SOURCE_DIR;
const fs::path kBuild = MOEBENCH_BUILD_DIR;
const fs::path kScript = kSource / "scripts" / "kernel_report.py";
const fs::path kBaseline = kSource / "results" / "static" / "sm90a.json";

std::string report_cmd(const std::string& args) { return "python3 " + quote(kScript) + " " + args; }

json baseline() { return json::parse(slurp(kBaseline)); }

// The baseline was read from sm_90a objects; a build for other architectures has other kernels.
bool builds_sm90a(std::string* why) {
  const std::string archs = MOEBENCH_CUDA_ARCHITECTURES;
  *why = "this build is for CUDA architectures '" + archs + "', not 90a: results/static/sm90a.json does not apply";
  return archs == "90a";
}

// Writes `doctor(baseline)` and gates it against the baseline.
Proc gate_doctored(const std::string& name, const std::function<void(json&)>& doctor) {
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-" + name);
  json j = baseline();
  doctor(j);
  std::ofstream(dir / "new.json") << j.dump();
  const Proc r = sh(report_cmd("--report " + quote(dir / "new.json") + " --check " + quote(kBaseline)));
  fs::remove_all(dir);
  return r;
}

// The first kernel of `family` (and `kind`) that satisfies pred.
json& pick(json& j, const std::string& family, const std::function<bool(const json&)>& pred) {
  for (auto& k : j["kernels"])
    if (k["family"] == family && pred(k)) return k;
  throw std::runtime_error("the baseline has no " + family + " kernel for this test");
}

bool no_spill(const json& k) {
  return k["spill_stores"] == 0 && k["spill_loads"] == 0 && k["stack_bytes"] == 0 && k["local_bytes"] == 0;
}

int ctas(const json& k) { return k["occupancy"]["h100"]["ctas_per_sm"].get<int>(); }

// Runs `body` in python beside kernel_report.py with `f`, the functions of tests/data/sass/<fixture>
// parsed, and `k`, the module; `body` prints one JSON document, which is returned (null on failure).
json on_fixture(const std::string& fixture, const std::string& body, std::string* out) {
  const fs::path sass = kSource / "tests" / "data" / "sass" / fixture;
  const std::string py = "import json, kernel_report as k; f = k.parse_sass(open('" + sass.string() + "').read()); " + body;
  const Proc r = sh("cd " + quote(kSource / "scripts") + " && python3 -c \"" + py + "\"");
  *out = r.out;
  return r.code == 0 ? json::parse(r.out) : json();
}

}  // namespace

TEST(KernelReport, ThisBuildPassesTheCommittedBaseline) {
  std::string why;
  if (!builds_sm90a(&why)) GTEST_SKIP() << why;
  const fs::path out = moe::testing::fresh_temp_dir("kernel-report-build");
  const Proc r = sh(report_cmd(quote(kBuild) + " --json " + quote(out / "report.json") + " --markdown " +
                               quote(out / "report.md") + " --check " + quote(kBaseline)));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no regression against"), std::string::npos) << r.out;

  const json rep = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(rep["schema"], "moebench/kernel-report@1");
  // Every kernel of the build is tied to its config, or listed as unmapped; this build's families
  // are all known, so nothing is unmapped.
  std::set<std::string> families;
  for (auto& k : rep["kernels"]) {
    families.insert(k.value("family", ""));
    if (k["mapped"] == false) {
      bool listed = false;
      for (auto& n : rep["unmapped"]) listed = listed || n == k["name"];
      EXPECT_TRUE(listed) << k["name"];
    }
    EXPECT_GT(k["registers"].get<int>(), 0) << k["name"];
    EXPECT_GT(k["instructions"].get<int>(), 0) << k["name"];
    EXPECT_GE(ctas(k), 1) << k["name"] << " cannot run on an H100 as reported";
  }
  // Every kernel this build holds is one the script knows, CUTLASS's wgmma instantiations
  // included (their translation unit names their config): nothing is unmapped.
  EXPECT_TRUE(rep["unmapped"].empty()) << rep["unmapped"].dump();
  for (auto& k : rep["kernels"])
    if (k["kind"] == "wgmma") {
      EXPECT_EQ(k["config"]["kernel"], "wgmma") << k["name"];
      EXPECT_GT(k["dynamic_smem_bytes"].get<int>(), 0) << k["name"] << ": its shared memory comes from the build";
    }
  for (const char* f : {"router", "dispatch", "gmm", "combine"}) EXPECT_TRUE(families.count(f)) << f;

  // The figures the issues' targets read: a gmm mma k-loop with HMMA and LDGSTS, a router row on
  // the DeepSeek-V3 and Kimi-K2 paths, 128-bit loads in a 16-byte gather.
  bool kloop = false, gather128 = false;
  int fp8_mma = 0;
  for (auto& k : rep["kernels"]) {
    if (k["family"] == "gmm" && k["kind"] == "mma") {
      // Its tile is one the C++ lists (moebench kernel-static), so its smem formula applied.
      EXPECT_GT(k["dynamic_smem_bytes"].get<int>(), 0) << k["name"];
      const json& l = k["k_loop"];
      kloop = kloop || (l["tensor"].get<int>() > 0 && l["ldgsts"].get<int>() > 0 && l.contains("non_tensor_per_ldgsts"));
    }
    if (k["kind"] == "gather" && k["config"]["vec"] == 16) gather128 = gather128 || k["memory"]["ldg128"].get<int>() > 0;
    if (k["family"] == "gmm" && k["kind"] == "mma-fp8") {
      // fp8's decode kernel: e4m3 unpacked to f16 in registers for HMMA, fed by cp.async, and
      // nothing in local memory.
      ++fp8_mma;
      const json& l = k["k_loop"];
      ASSERT_FALSE(l.is_null()) << k["name"];
      EXPECT_EQ(l["tensor_ops"], json({"HMMA"})) << k["name"];
      EXPECT_GT(l["conversions"].get<int>(), 0) << k["name"];
      EXPECT_GT(l["ldgsts"].get<int>(), 0) << k["name"];
      for (const char* f : {"spill_stores", "spill_loads", "stack_bytes", "local_bytes"}) EXPECT_EQ(k[f], 0) << k["name"] << " " << f;
    }
  }
  EXPECT_EQ(fp8_mma, 8);  // four tiles, up and down
  EXPECT_TRUE(kloop);
  EXPECT_TRUE(gather128);
  // Issue 23's targets: a 16-byte combine vector costs at most 24 instructions per slot (the row
  // addresses are computed once per slot, not per column), and the single-CTA aligner at most
  // 2.0 warp-instructions per routed slot.
  int combine_loops = 0, token_loops = 0, single = 0;
  for (auto& k : rep["kernels"]) {
    if (k.contains("memory") && k["memory"].contains("slot_loop") && !k["memory"]["slot_loop"].is_null()) {
      const double per = k["memory"]["slot_loop"]["per_vector"].get<double>();
      EXPECT_GT(per, 1.0) << k["name"];
      if (k["family"] == "combine") {
        ++combine_loops;
        EXPECT_LE(per, 24.0) << k["name"];
      } else {
        ++token_loops;
      }
    }
    if (k["kind"] == "align" && k["config"]["aligner"] == "single") {
      ++single;
      ASSERT_TRUE(k.contains("per_slot") && !k["per_slot"].is_null()) << k["name"];
      EXPECT_EQ(k["per_slot"]["loops"].size(), 3u) << k["per_slot"].dump();  // staging, ranking, placing
      EXPECT_LE(k["per_slot"]["warp_instructions"].get<double>(), 2.0) << k["per_slot"].dump();
    }
  }
  EXPECT_GT(combine_loops, 0);
  EXPECT_GT(token_loops, 0);
  EXPECT_EQ(single, 2);
  // Every preset can run some compiled router shape, and the report found its row.
  EXPECT_EQ(rep["router_best"].size(), rep["meta"]["presets"].size());
  for (const char* p : {"deepseek-v3", "kimi-k2"}) {
    ASSERT_TRUE(rep["router_best"].contains(p)) << p;
    EXPECT_GT(rep["router_best"][p]["per_row"].get<int>(), 100) << p;
  }
  // Issue 14's targets for the best compiled router row.
  EXPECT_LE(rep["router_best"]["deepseek-v3"]["per_row"].get<int>(), 900);
  EXPECT_LE(rep["router_best"]["kimi-k2"]["per_row"].get<int>(), 1400);
  const std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("| family |"), std::string::npos);
  EXPECT_NE(md.find("block_m="), std::string::npos);
  fs::remove_all(out);
}

TEST(KernelReport, ASkippedElseBlockRunsToItsOwnClosingBrace) {
  // `} else {` closes the sigmoid block and opens the softmax one; a sigmoid preset skips the
  // softmax block to its end, past its inner loops (not only up to the first of them).
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-regions");
  std::ofstream(dir / "regions.py")
      << "import importlib.util as u, sys\n"
         "s = u.spec_from_file_location('kr', sys.argv[1]); kr = u.module_from_spec(s); s.loader.exec_module(kr)\n"
         "lines = ['if (a.sigmoid) {', '  x();', '} else {', '  for (;;) {', '    y();', '  }', '  z();', '}', 'w();']\n"
         "r = kr.router_regions(lines)\n"
         "print(r['sigmoid'], r['not_sigmoid'])\n";
  const Proc r = sh("python3 " + quote(dir / "regions.py") + " " + quote(kScript));
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "[(1, 3)] [(3, 8)]\n");
}

TEST(KernelReport, AnUnchangedReportAndANewKernelPass) {
  EXPECT_EQ(gate_doctored("same", [](json&) {}).code, 0);
  // A kernel the baseline lacks is a new row, not an error; one it has and the report lacks is a note.
  const Proc r = gate_doctored("new-kernel", [](json& j) {
    json k = j["kernels"][0];
    k["name"] = "void moe::gmm::cuda::some_new_kernel<1>(int)";
    k["spill_stores"] = 5;
    j["kernels"].push_back(k);
    j["kernels"].erase(1);
  });
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("note: not in the new report"), std::string::npos) << r.out;
}

TEST(KernelReport, GateFailsOnSpillsOrStackInAKernelThatHadNone) {
  for (const char* field : {"spill_stores", "spill_loads", "stack_bytes"}) {
    std::string who;
    const Proc r = gate_doctored(std::string("spill-") + field, [&](json& j) {
      json& k = pick(j, "combine", no_spill);
      k[field] = 8;
      who = k["name"];
    });
    EXPECT_EQ(r.code, 1) << field << "\n" << r.out;
    EXPECT_NE(r.out.find("REGRESSION"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(who), std::string::npos) << r.out;
  }
}

TEST(KernelReport, GateFailsWhenRegistersCrossAnOccupancyStepOnly) {
  // Find, for a kernel, the fewest extra registers that lose a CTA per SM, and one that does not.
  const Proc crossed = gate_doctored("regs-step", [](json& j) {
    json& k = pick(j, "dispatch", [](const json& k) { return k["occupancy"]["h100"]["limited_by"] != "shared_memory"; });
    k["registers"] = 65536 / (k["threads"].get<int>() * std::max(1, ctas(k) - 1)) + 8;
  });
  EXPECT_EQ(crossed.code, 1) << crossed.out;
  EXPECT_NE(crossed.out.find("lose an occupancy step"), std::string::npos) << crossed.out;
  // Registers are allocated per warp in blocks of 256 (8 per thread): rounding a count up to
  // the next multiple of 8 raises it without changing occupancy.
  const Proc within = gate_doctored("regs-within", [](json& j) {
    json& k = pick(j, "dispatch", [](const json& k) { return k["registers"].get<int>() % 8 != 0; });
    k["registers"] = (k["registers"].get<int>() / 8 + 1) * 8;
  });
  EXPECT_EQ(within.code, 0) << within.out;
}

TEST(KernelReport, GateFailsWhenAHotLoopGrowsMoreThanFivePercent) {
  const Proc kloop = gate_doctored("kloop", [](json& j) {
    json& k = pick(j, "gmm", [](const json& k) { return k.contains("k_loop") && !k["k_loop"].is_null(); });
    k["k_loop"]["instructions"] = static_cast<int>(k["k_loop"]["instructions"].get<int>() * 1.06) + 1;
  });
  EXPECT_EQ(kloop.code, 1) << kloop.out;
  EXPECT_NE(kloop.out.find("k-loop"), std::string::npos) << kloop.out;
  const Proc small = gate_doctored("kloop-small", [](json& j) {
    json& k = pick(j, "gmm", [](const json& k) { return k.contains("k_loop") && !k["k_loop"].is_null(); });
    k["k_loop"]["instructions"] = static_cast<int>(k["k_loop"]["instructions"].get<int>() * 1.04);
  });
  EXPECT_EQ(small.code, 0) << small.out;

  const Proc row = gate_doctored("router-row", [](json& j) {
    json& k = pick(j, "router", [](const json& k) { return k.contains("per_row") && k["per_row"].contains("deepseek-v3"); });
    k["per_row"]["deepseek-v3"] = static_cast<int>(k["per_row"]["deepseek-v3"].get<int>() * 1.06) + 1;
  });
  EXPECT_EQ(row.code, 1) << row.out;
  EXPECT_NE(row.out.find("deepseek-v3 row"), std::string::npos) << row.out;
}

TEST(KernelReport, GateFailsWhenASlotCostsMoreThanFivePercentMore) {
  const Proc combine = gate_doctored("slot-loop", [](json& j) {
    json& k = pick(j, "combine", [](const json& k) { return !k["memory"]["slot_loop"].is_null(); });
    k["memory"]["slot_loop"]["per_vector"] = k["memory"]["slot_loop"]["per_vector"].get<double>() * 1.06;
  });
  EXPECT_EQ(combine.code, 1) << combine.out;
  EXPECT_NE(combine.out.find("16-byte vector per slot"), std::string::npos) << combine.out;
  const Proc small = gate_doctored("slot-loop-small", [](json& j) {
    json& k = pick(j, "combine", [](const json& k) { return !k["memory"]["slot_loop"].is_null(); });
    k["memory"]["slot_loop"]["per_vector"] = k["memory"]["slot_loop"]["per_vector"].get<double>() * 1.04;
  });
  EXPECT_EQ(small.code, 0) << small.out;
  const Proc align = gate_doctored("per-slot", [](json& j) {
    json& k = pick(j, "dispatch", [](const json& k) { return k.contains("per_slot") && !k["per_slot"].is_null(); });
    k["per_slot"]["warp_instructions"] = k["per_slot"]["warp_instructions"].get<double>() * 1.06;
  });
  EXPECT_EQ(align.code, 1) << align.out;
  EXPECT_NE(align.out.find("per routed slot"), std::string::npos) << align.out;
}

TEST(KernelReport, GateFailsWhenGatherOrCombineDrop128BitAccesses) {
  const Proc gather = gate_doctored("gather128", [](json& j) {
    json& k = pick(j, "dispatch", [](const json& k) { return k["kind"] == "gather" && k["memory"]["ldg128"].get<int>() > 0; });
    k["memory"]["ldg"] = k["memory"]["ldg"].get<int>() + k["memory"]["ldg128"].get<int>() * 3;
    k["memory"]["ldg128"] = 0;
  });
  EXPECT_EQ(gather.code, 1) << gather.out;
  EXPECT_NE(gather.out.find("128-bit loads"), std::string::npos) << gather.out;
  const Proc combine = gate_doctored("combine128", [](json& j) {
    json& k = pick(j, "combine", [](const json& k) { return k["memory"]["stg128"].get<int>() > 0; });
    k["memory"]["stg128"] = 0;
  });
  EXPECT_EQ(combine.code, 1) << combine.out;
  EXPECT_NE(combine.out.find("128-bit stores"), std::string::npos) << combine.out;
}

TEST(KernelReport, RefusesInputThatIsNotAReport) {
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-bad");
  std::ofstream(dir / "results.json") << R"({"schema": "moebench/results@1", "kernels": []})";
  const Proc r = sh(report_cmd("--report " + quote(dir / "results.json") + " --check " + quote(kBaseline)));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench/kernel-report@1"), std::string::npos) << r.out;
  const Proc none = sh(report_cmd(quote(dir / "no-such-build")));
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("does not exist"), std::string::npos) << none.out;
  fs::remove_all(dir);
}

// An mma.sync gmm kernel: its ring loop (the trips after the k-loop's) and its instructions
// before the first LDGSTS, from a hand-written SASS fixture.
TEST(KernelReport, ReadsTheRingLoopAndThePathToTheFirstLoad) {
  const fs::path sass = kSource / "tests" / "data" / "sass" / "mma_ring.sass";
  const std::string py = "import json, kernel_report as k; f = k.parse_sass(open('" + sass.string() +
                         "').read()); i = f['_Z18fixture_mma_kernelv']; "
                         "print(json.dumps({'loop': k.gmm_loop(i, k.loops_of(i)), 'first': k.first_load(i)}))";
  const Proc r = sh("cd " + quote(kSource / "scripts") + " && python3 -c \"" + py + "\"");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["first"], 4) << r.out;  // the NOP is not work
  const json& l = j["loop"];
  EXPECT_EQ(l["instructions"], 6) << r.out;  // the k-loop: the shorter of the two
  EXPECT_EQ(l["ring_loop"]["instructions"], 9) << r.out;
  EXPECT_EQ(l["ring_loop"]["tensor"], 2) << r.out;
  EXPECT_DOUBLE_EQ(l["ring_loop"]["non_tensor_per_tensor"].get<double>(), 3.5) << r.out;
}

TEST(KernelReport, GateFailsOnACostlierRingLoopOrALaterFirstLoad) {
  auto decode = [](const json& k) {
    return k["family"] == "gmm" && k.contains("k_loop") && !k["k_loop"].is_null() && k["k_loop"].contains("ring_loop") &&
           k["config"].is_object() && k["config"].value("block_m", 0) == 16;
  };
  const Proc ring = gate_doctored("ring", [&](json& j) {
    json& r = pick(j, "gmm", decode)["k_loop"]["ring_loop"];
    r["non_tensor_per_tensor"] = r["non_tensor_per_tensor"].get<double>() * 1.06 + 0.01;
  });
  EXPECT_EQ(ring.code, 1) << ring.out;
  EXPECT_NE(ring.out.find("ring loop"), std::string::npos) << ring.out;
  // Above 5 per HMMA in a 16-row tile fails even where the baseline says the same.
  {
    const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-ring-cap");
    json j = baseline();
    pick(j, "gmm", decode)["k_loop"]["ring_loop"]["non_tensor_per_tensor"] = 5.5;
    std::ofstream(dir / "both.json") << j.dump();
    const Proc r = sh(report_cmd("--report " + quote(dir / "both.json") + " --check " + quote(dir / "both.json")));
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("above 5"), std::string::npos) << r.out;
    fs::remove_all(dir);
  }
  const Proc first = gate_doctored("first-load", [&](json& j) {
    json& k = pick(j, "gmm", decode);
    k["first_load_after"] = static_cast<int>(k["first_load_after"].get<int>() * 1.06) + 2;
  });
  EXPECT_EQ(first.code, 1) << first.out;
  EXPECT_NE(first.out.find("first operand load"), std::string::npos) << first.out;
  const Proc within = gate_doctored("first-load-within", [&](json& j) {
    json& k = pick(j, "gmm", decode);
    k["first_load_after"] = k["first_load_after"].get<int>() + 1;
  });
  EXPECT_EQ(within.code, 0) << within.out;
}

// The wgmma kernels of the gmm family are warp-specialized: the k-loop is the consumers' HGMMA
// loop, and the producer's TMA loop is reported beside it. Read from a hand-written SASS fixture,
// since this build may hold no such kernel yet.
TEST(KernelReport, ReadsAWarpSpecializedWgmmaKernel) {
  std::string out;
  const json j = on_fixture("warp_specialized.sass",
                            "i = f['_Z17fixture_ws_kernelv']; n = 'void cutlass::device_kernel<X<cutlass::bfloat16_t> >(int)'; "
                            "st = {'wgmma_tiles': [{'block_m': 128, 'block_n': 256, 'block_k': 64, 'cluster_m': 2, 'cluster_n': 1, "
                            "'schedule': 'cooperative', 'dynamic_smem_bytes': 1234}]}; "
                            "print(json.dumps({'loop': k.gmm_loop(i, k.loops_of(i)), "
                            "'id': k.identify(n, st, 'CMakeFiles/x.dir/kernels/gmm/wgmma/wgmma_gemm_128x256x64_coop_c2x1.cu.o'), "
                            "'other': k.identify(n, st, 'CMakeFiles/x.dir/kernels/gmm/elsewhere.cu.o')}))",
                            &out);
  ASSERT_FALSE(j.is_null()) << out;
  const json& l = j["loop"];
  EXPECT_EQ(l["tensor"], 2) << out;
  EXPECT_EQ(l["tensor_ops"], json::array({"HGMMA"})) << out;
  EXPECT_EQ(l["instructions"], 7) << out;  // the NOP is not work
  EXPECT_DOUBLE_EQ(l["non_tensor_per_tensor"].get<double>(), 2.5) << out;
  EXPECT_EQ(l["utmaldg"], 0) << out;
  EXPECT_EQ(l["producer_loop"]["utmaldg"], 2) << out;
  EXPECT_EQ(l["producer_loop"]["instructions"], 6) << out;
  // The translation unit of a wgmma instantiation names its config; the build's figure gives its smem.
  EXPECT_EQ(j["id"]["family"], "gmm");
  EXPECT_EQ(j["id"]["kind"], "wgmma");
  EXPECT_EQ(j["id"]["config"], json({{"kernel", "wgmma"}, {"block_m", 128}, {"block_n", 256}, {"block_k", 64},
                                     {"cluster_m", 2}, {"cluster_n", 1}, {"schedule", "cooperative"}})) << out;
  EXPECT_EQ(j["id"]["variant"]["dtype"], "bf16");
  EXPECT_EQ(j["id"]["dynamic_smem_bytes"], 1234);
  // Elsewhere a CUTLASS kernel is still gmm's, but with no config: listed as unmapped.
  EXPECT_EQ(j["other"]["kind"], "wgmma");
  EXPECT_TRUE(j["other"]["config"].is_null());
}

// Programmatic dependent launch, read from a hand-written SASS fixture: ACQBULK is the wait,
// PREEXIT the trigger, and the work laid out before the wait is counted (the NOP is not work).
// A kernel the library launches with the attribute and that never waits is a gate failure.
TEST(KernelReport, ReadsWhereAKernelWaitsAndGatesOneThatNeverDoes) {
  std::string out;
  const json j = on_fixture("pdl.sass",
                            "w, n = k.pdl_of(f['_Z14fixture_waitsv']), k.pdl_of(f['_Z18fixture_never_waitsv']); "
                            "ks = [{'family': fam, 'kind': kind, 'name': fam + '-' + kind, 'pdl': n} for fam, kind in "
                            "(('router', 'row'), ('gmm', 'mma'), ('gmm', 'wgmma'), ('dispatch', 'align'))]; "
                            "print(json.dumps({'waits': w, 'never': n, 'missing': k.missing_waits(ks)}))",
                            &out);
  ASSERT_FALSE(j.is_null()) << out;
  EXPECT_EQ(j["waits"], json({{"waits", true}, {"triggers", true}, {"before_wait", 2}, {"wait_count", 1},
                              {"loads_before_wait", json::array()}, {"nc_loads", 0}, {"prefetch_before_wait", 0},
                              {"prefetches", 0}})) << out;
  EXPECT_EQ(j["never"], json({{"waits", false}, {"triggers", false}, {"before_wait", nullptr}, {"wait_count", 0},
                              {"loads_before_wait", json::array()}, {"nc_loads", 0}, {"prefetch_before_wait", 0},
                              {"prefetches", 0}})) << out;
  // CUTLASS's grouped GEMM is launched without the attribute: it need not wait.
  ASSERT_EQ(j["missing"].size(), 3u) << out;
  for (auto& line : j["missing"]) EXPECT_EQ(line.get<std::string>().find("gmm-wgmma"), std::string::npos) << out;
}

// The rules of the wait, on planted violations: a global load laid out before the wait (ptxas
// hoisted an __ldg there), a second wait on another path, a non-coherent load after the wait.
// Each is a gate line naming the kernel and what it broke; the clean kernel passes.
TEST(KernelReport, GatesALoadBeforeTheWaitASecondWaitAndNonCoherentLoads) {
  std::string out;
  const json j = on_fixture("pdl.sass",
                            "names = ['_Z14fixture_waitsv', '_Z19fixture_loads_earlyv', '_Z19fixture_waits_twicev', "
                            "'_Z17fixture_reads_ncv']; "
                            "ks = [{'family': 'dispatch', 'kind': 'gather', 'name': n, 'pdl': k.pdl_of(f[n])} for n in names]; "
                            "print(json.dumps({'pdl': [x['pdl'] for x in ks], 'bad': k.missing_waits(ks)}))",
                            &out);
  ASSERT_FALSE(j.is_null()) << out;
  EXPECT_EQ(j["pdl"][1]["loads_before_wait"], json::array({"0010 LDG.E.CONSTANT"})) << out;
  EXPECT_EQ(j["pdl"][2]["wait_count"], 2) << out;
  EXPECT_EQ(j["pdl"][2]["loads_before_wait"], json::array()) << out;
  EXPECT_EQ(j["pdl"][3]["nc_loads"], 1) << out;
  std::string all;
  for (auto& line : j["bad"]) all += line.get<std::string>() + "\n";
  EXPECT_EQ(all.find("fixture_waitsv"), std::string::npos) << all;
  EXPECT_NE(all.find("fixture_loads_earlyv): global loads laid out before griddepcontrol.wait"), std::string::npos) << all;
  EXPECT_NE(all.find("fixture_waits_twicev): 2 griddepcontrol.waits"), std::string::npos) << all;
  EXPECT_NE(all.find("fixture_reads_ncv): 1 non-coherent loads"), std::string::npos) << all;
  // The early load is non-coherent too: two lines for it, one each for the others.
  EXPECT_EQ(j["bad"].size(), 4u) << all;
}

// A decode down tile (gmm mma or mma-fp8, block_m 16, stage down) may read its map before the wait
// with strong loads, and must then send its first tile's weights to L2 there (UBLKPF); any other
// kernel may not load before the wait, strong or not, and a plain load stays barred for the down
// tile too. Its first operand load is counted on the path that branches over the early block.
TEST(KernelReport, ADecodeDownTileReadsItsMapEarlyAndPrefetchesBeforeTheWait) {
  std::string out;
  const json j = on_fixture(
      "pdl.sass",
      "down = lambda n: {'family': 'gmm', 'kind': 'mma', 'name': n, 'config': {'block_m': 16}, "
      "'variant': {'stage': 'down'}, 'pdl': k.pdl_of(f[n])}; "
      "up = lambda n: dict(down(n), variant={'stage': 'up'}); "
      "ks = [down('_Z17fixture_early_mapv'), down('_Z19fixture_early_no_pfv'), up('_Z17fixture_early_mapv'), "
      "down('_Z19fixture_loads_earlyv')]; "
      "from static_report.pdl import early_block; "
      "e = f['_Z17fixture_early_mapv']; "
      "print(json.dumps({'pdl': ks[0]['pdl'], 'bad': k.missing_waits(ks), 'block': early_block(e), "
      "'first': k.first_load(e, early_block(e)), 'first_all': k.first_load(e)}))",
      &out);
  ASSERT_FALSE(j.is_null()) << out;
  EXPECT_EQ(j["pdl"]["prefetch_before_wait"], 1) << out;
  EXPECT_EQ(j["block"], json::array({3, 6})) << out;
  EXPECT_EQ(j["first"], 6) << out;  // 9 laid out before the LDGSTS, 3 of them branched over
  EXPECT_EQ(j["first_all"], 9) << out;
  std::string all;
  for (auto& line : j["bad"]) all += line.get<std::string>() + "\n";
  EXPECT_EQ(all.find("(_Z17fixture_early_mapv): global loads"), all.rfind("(_Z17fixture_early_mapv): global loads")) << all;
  EXPECT_NE(all.find("(_Z19fixture_early_no_pfv): no bulk L2 prefetch (UBLKPF)"), std::string::npos) << all;
  EXPECT_EQ(all.find("(_Z19fixture_early_no_pfv): global loads"), std::string::npos) << all;
  EXPECT_NE(all.find("(_Z17fixture_early_mapv): global loads laid out before griddepcontrol.wait (ACQBULK): 0030 "
                     "LDG.E.128.STRONG.GPU"), std::string::npos) << all;
  EXPECT_NE(all.find("(_Z19fixture_loads_earlyv): global loads laid out"), std::string::npos) << all;
  // The up kernel's strong load, the down tile's missing prefetch, the plain early load (with a
  // line of its own for being non-coherent, and a missing prefetch: it is a down tile too).
  EXPECT_EQ(j["bad"].size(), 5u) << all;
}

// The layer's decode front sends the routed experts' weights to L2 after its wait (l2_prefetch):
// a front without UBLKPF is a gate line; one with it passes, and no other kernel needs one.
TEST(KernelReport, TheDecodeFrontMustSendWeightsToL2) {
  std::string out;
  const json j = on_fixture("pdl.sass",
                            "kern = lambda fam, kind, n: {'family': fam, 'kind': kind, 'name': n, 'pdl': k.pdl_of(f[n])}; "
                            "ks = [kern('layer', 'decode-front', '_Z21fixture_front_sends_l2v'), "
                            "kern('layer', 'decode-front', '_Z14fixture_waitsv'), kern('dispatch', 'gather', '_Z14fixture_waitsv')]; "
                            "print(json.dumps({'pdl': ks[0]['pdl'], 'bad': k.missing_waits(ks)}))",
                            &out);
  ASSERT_FALSE(j.is_null()) << out;
  EXPECT_EQ(j["pdl"]["prefetches"], 1) << out;
  EXPECT_EQ(j["pdl"]["prefetch_before_wait"], 0) << out;
  ASSERT_EQ(j["bad"].size(), 1u) << out;
  EXPECT_NE(j["bad"][0].get<std::string>().find("layer decode-front (_Z14fixture_waitsv): no bulk L2 prefetch (UBLKPF)"),
            std::string::npos) << out;
}

TEST(KernelReport, GateFailsWhenAKernelOfTheLayerDoesNotWait) {
  std::string who;
  const Proc r = gate_doctored("no-wait", [&](json& j) {
    json& k = pick(j, "combine", [](const json&) { return true; });
    k["pdl"] = json({{"waits", false}, {"triggers", true}, {"before_wait", nullptr}});
    who = k["name"];
  });
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no griddepcontrol.wait (ACQBULK)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(who), std::string::npos) << r.out;
}

// cuobjdump 13 folds the driver's 1 KB per CTA (.nv.shared.reserved.0) into SHARED; occupancy must
// count it once. Recorded from this build: gmm 16x64x32 s4 (up, bf16) uses 27,144 bytes of dynamic
// shared memory at the presets' largest expert count, and 8 of its CTAs fit in an SM's 228 KB
// (7 when the reserved slice is added twice). Without the section the slice is added.
TEST(KernelReport, CountsTheReservedSharedMemoryOnce) {
  const fs::path data = kSource / "tests" / "data" / "cuobjdump";
  const std::string py =
      "import json, sys; sys.path.insert(0, '" + (kSource / "scripts").string() + "'); "
      "from static_report.cubins import resources; from static_report.report import resource_fields; "
      "from static_report.occupancy import occupancy_of; "
      "res = open('" + (data / "gmm_16x64x32_s4.res-usage.txt").string() + "').read(); "
      "elf = open('" + (data / "gmm_16x64x32_s4.elf-sections.txt").string() + "').read(); "
      "ctas = lambda e: [occupancy_of({**resource_fields(u), 'threads': 128, 'dynamic_smem_bytes': 27144})"
      "['h100']['ctas_per_sm'] for u in resources(res, e).values()]; "
      "print(json.dumps({'with': ctas(elf), 'without': ctas(elf.replace('reserved', 'other'))}))";
  const Proc r = sh("python3 -c \"" + py + "\"");
  ASSERT_EQ(r.code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["with"], json::array({8})) << r.out;
  // Older cubins leave the slice out of SHARED: 1,024 + 27,144 + 1,024 reserved -> 7 per SM.
  EXPECT_EQ(j["without"], json::array({7})) << r.out;
}

// Kernels per layer call: a folded decode call above three kernels at decode token counts fails
// whatever the baseline says; a call that launches more than in the baseline, or stops running, fails.
TEST(KernelReport, GateFailsWhenALayerCallLaunchesMoreKernels) {
  auto call = [](json& j, const std::string& model, const std::string& path, int tokens) -> json& {
    for (auto& r : j["layer_kernels"]["rows"])
      if (r["model"] == model && r["dtype"] == "bf16" && r["path"] == path)
        for (auto& c : r["calls"])
          if (c["tokens"] == tokens) return c;
    throw std::runtime_error("the baseline has no layer_kernels row for " + model + " " + path);
  };
  const Proc decode = gate_doctored("layer-decode", [&](json& j) { call(j, "qwen3-30b-a3b", "decode", 8)["kernels"] = 4; });
  EXPECT_EQ(decode.code, 1) << decode.out;
  EXPECT_NE(decode.out.find("qwen3-30b-a3b bf16 path=decode at 8 tokens: 4 kernels per call with the fold, above 3"),
            std::string::npos) << decode.out;
  const Proc stages = gate_doctored("layer-stages", [&](json& j) {
    json& c = call(j, "mixtral-8x7b", "stages", 32);
    c["kernels"] = c["kernels"].get<int>() + 1;
  });
  EXPECT_EQ(stages.code, 1) << stages.out;
  EXPECT_NE(stages.out.find("mixtral-8x7b bf16 path=stages at 32 tokens: 8 -> 9 kernels per call"), std::string::npos)
      << stages.out;
  const Proc gone = gate_doctored("layer-invalid", [&](json& j) {
    json& c = call(j, "deepseek-v3", "decode", 1);
    c = json{{"tokens", 1}, {"invalid", "planted"}};
  });
  EXPECT_EQ(gone.code, 1) << gone.out;
  EXPECT_NE(gone.out.find("deepseek-v3 bf16 path=decode at 1 tokens: ran in 3 kernels, now invalid: planted"),
            std::string::npos) << gone.out;
}
