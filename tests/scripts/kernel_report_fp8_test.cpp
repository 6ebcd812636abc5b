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

// check_fp8_encode's lines for kernels written as a python list of dicts; `facts` python
// computing encode_facts from a list of opcodes.
std::string encode_problems(const std::string& kernels) {
  const auto r = sh("cd " + quote(kScripts) + " && python3 -c \"import kernel_report as k\n"
                    "def facts(ops): return k.encode_facts([{'op': o} for o in ops])\n"
                    "print('|'.join(k.check_fp8_encode(" + kernels + ")))\"");
  EXPECT_EQ(r.code, 0) << r.out;
  return r.out;
}

TEST(KernelReportFp8, CodeWritersEncodeWithTheHardwareConversion) {
  // The quantizing gather, the silu*up+quant pass and the fused fp8 mma up tiles write e4m3
  // codes: with F2FP.SATFINITE.E4M3 they pass; the decoding F2FP (e4m3 -> f16) and a software
  // rule (integer ops only) do not count; kernels that write no codes are not held to it.
  const std::string hw = "facts(['F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C', 'LOP3.LUT'])";
  const std::string decode_only = "facts(['F2FP.F16.E4M3.UNPACK_B', 'LOP3.LUT', 'ISETP.GT.U32.AND'])";
  auto kernel = [](const std::string& kind, const std::string& variant, const std::string& config, const std::string& f) {
    return "{'name': '" + kind + " fixture', 'kind': '" + kind + "', 'variant': " + variant + ", 'config': " + config +
           ", 'encode': " + f + "}";
  };
  const std::string gather_fp8 = "{'dtype': 'fp8', 'order': 'row'}", up = "{'dtype': 'fp8', 'stage': 'up'}";
  EXPECT_EQ(encode_problems("[" + kernel("gather", gather_fp8, "{}", hw) + ", " + kernel("fp8-silu-quant", up, "{}", hw) +
                            ", " + kernel("mma-fp8", up, "{'block_n': 256}", hw) + "]"),
            "\n");
  const std::string sw = encode_problems("[" + kernel("gather", gather_fp8, "{}", decode_only) + "]");
  EXPECT_NE(sw.find("fp8 encode gather fixture: writes e4m3 codes without F2FP.SATFINITE.E4M3"), std::string::npos) << sw;
  const std::string fused = encode_problems("[" + kernel("mma-fp8", up, "{'block_n': 256}", decode_only) + "]");
  EXPECT_NE(fused.find("fp8 encode mma-fp8 fixture"), std::string::npos) << fused;
  const std::string none = encode_problems("[{'name': 'q', 'kind': 'fp8-silu-quant', 'variant': " + up + "}]");
  EXPECT_NE(none.find("no conversion facts"), std::string::npos) << none;
  // Not code writers: an unfused up tile (fp32 out), fp8 down, a bf16 gather.
  EXPECT_EQ(encode_problems("[" + kernel("mma-fp8", up, "{'block_n': 128}", decode_only) + ", " +
                            kernel("mma-fp8", "{'dtype': 'fp8', 'stage': 'down'}", "{'block_n': 256}", decode_only) + ", " +
                            kernel("gather", "{'dtype': 'bf16'}", "{}", decode_only) + "]"),
            "\n");
}

TEST(KernelReportFp8, CheckFailsOnAReportWithASoftwareEncoder) {
  const fs::path dir = moe::testing::fresh_temp_dir("kernel-report-fp8-encode-gate");
  const fs::path baseline = kSource / "results" / "static" / "sm90a.json";
  json j = json::parse(slurp(baseline));
  bool planted = false;
  for (auto& k : j["kernels"])
    if (k.value("kind", "") == "gather" && k["variant"].value("dtype", "") == "fp8") {
      ASSERT_GT(k["encode"]["e4m3_converts"].get<int>(), 0) << k.dump();  // the committed build's gather
      k["encode"]["e4m3_converts"] = 0;
      planted = true;
      break;
    }
  ASSERT_TRUE(planted);
  std::ofstream(dir / "new.json") << j.dump();
  const auto r = sh("python3 " + quote(kScripts / "kernel_report.py") + " --report " + quote(dir / "new.json") +
                    " --check " + quote(baseline));
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("writes e4m3 codes without F2FP.SATFINITE.E4M3"), std::string::npos) << r.out;
}

}  // namespace
