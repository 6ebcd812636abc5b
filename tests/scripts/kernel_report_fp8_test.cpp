// The kernel report's rules for fp8 wgmma kernels (scripts/static_report/fp8_wgmma.py): warpgroup
// MMAs on E4M3 operands, TMA loads, no local memory. Read from a hand-written SASS fixture
// (tests/data/sass/fp8_wgmma.sass) and from copies planted with a bf16 MMA, no TMA or a spill;
// --check fails on a report holding such a kernel even when the baseline has never seen it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/measure/json_io.hpp"

namespace fs = std::filesystem;
using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;
using moe::tuner::json;

namespace {

const fs::path kSource = MOEBENCH_SOURCE_DIR;
const fs::path kScripts = kSource / "scripts";
const fs::path kFixture = kSource / "tests" / "data" / "sass" / "fp8_wgmma.sass";

// The fixture's kernel as the report would list it, with `plant` (python: text -> text) applied
// to its SASS first and local memory bytes set to `local`.
json fp8_kernel(const std::string& plant, int local) {
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-fp8");
  std::ofstream(dir / "k.py")
      << "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport kernel_report as k\n"
      << "text = open(sys.argv[2]).read()\ntext = " << plant << "\n"
      << "i = k.parse_sass(text)['_Z18fixture_fp8_kernelv']\n"
      << "print(json.dumps({'name': 'void cutlass::device_kernel<fp8 fixture>(int)', 'kind': 'wgmma', 'family': 'gmm',\n"
      << "  'variant': {'dtype': 'e4m3'}, 'wgmma_ops': k.wgmma_facts(i), 'local_bytes': " << local << ",\n"
      << "  'stack_bytes': 0, 'spill_stores': sum(1 for x in i if x['op'] == 'STL'), 'spill_loads': 0}))\n";
  const auto r = sh("python3 " + quote(dir / "k.py") + " " + quote(kScripts) + " " + quote(kFixture));
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.out;
  return json::parse(r.out);
}

// check_fp8_wgmma's lines for one kernel.
std::string problems(const json& kernel) {
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-fp8-check");
  std::ofstream(dir / "k.json") << json::array({kernel}).dump();
  const auto r = sh("cd " + quote(kScripts) + " && python3 -c \"import json, kernel_report as k; "
                    "print('|'.join(k.check_fp8_wgmma(json.load(open('" + (dir / "k.json").string() + "')))))\"");
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.out;
  return r.out;
}

TEST(KernelReportFp8, TheFixtureMeetsTheRules) {
  const json k = fp8_kernel("text", 0);
  EXPECT_EQ(k["wgmma_ops"]["tensor_ops"], json::array({"QGMMA.64x128x32.F32.E4M3.E4M3"})) << k.dump();
  EXPECT_EQ(k["wgmma_ops"]["wgmma"], 2);
  EXPECT_EQ(k["wgmma_ops"]["utmaldg"], 2);
  EXPECT_EQ(problems(k), "\n");
}

TEST(KernelReportFp8, PlantedBreaksAreNamed) {
  // A bf16 warpgroup MMA, an HMMA after an unpack, no TMA, a spill, local memory.
  const std::string bf16 = problems(fp8_kernel("text.replace('QGMMA.64x128x32.F32.E4M3.E4M3', 'HGMMA.64x128x16.F32.BF16')", 0));
  EXPECT_NE(bf16.find("without E4M3 operands: HGMMA.64x128x16.F32.BF16"), std::string::npos) << bf16;
  const std::string hmma = problems(fp8_kernel("text.replace('QGMMA.64x128x32.F32.E4M3.E4M3', 'HMMA.16816.F32')", 0));
  EXPECT_NE(hmma.find("issues no warpgroup MMA"), std::string::npos) << hmma;
  const std::string no_tma = problems(fp8_kernel("text.replace('UTMALDG.2D', 'LDG.E.128')", 0));
  EXPECT_NE(no_tma.find("no TMA load (UTMALDG)"), std::string::npos) << no_tma;
  const std::string spill = problems(fp8_kernel("text.replace('FFMA R88, R24, R40, R88', 'STL [R1], R88')", 16));
  EXPECT_NE(spill.find("16 local memory bytes"), std::string::npos) << spill;
  EXPECT_NE(spill.find("1 spill stores"), std::string::npos) << spill;
}

TEST(KernelReportFp8, CheckFailsOnAReportWithABrokenFp8Kernel) {
  // Not a comparison with the baseline: a kernel it has never seen is held to the rules too.
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-fp8-gate");
  const fs::path baseline = kSource / "results" / "static" / "sm90a.json";
  json j = json::parse(slurp(baseline));
  json k = j["kernels"][0];
  const json bad = fp8_kernel("text.replace('QGMMA.64x128x32.F32.E4M3.E4M3', 'HGMMA.64x128x16.F32.BF16')", 8);
  for (auto& [key, v] : bad.items()) k[key] = v;
  j["kernels"].push_back(k);
  std::ofstream(dir / "new.json") << j.dump();
  const auto r = sh("python3 " + quote(kScripts / "kernel_report.py") + " --report " + quote(dir / "new.json") +
                    " --check " + quote(baseline));
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("REGRESSION: fp8 wgmma void cutlass::device_kernel<fp8 fixture>(int): tensor instructions without E4M3"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8 local memory bytes"), std::string::npos) << r.out;
}

}  // namespace
