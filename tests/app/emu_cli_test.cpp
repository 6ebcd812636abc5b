// The emu backend through the moebench binary: `run` and `sweep` validate the cuda kernel
// sources under the SIMT emulator, time nothing and write no tables; configs whose GEMM is
// CUTLASS's are `not emulated` while their own kernels are checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "moe/family.hpp"
#include "support/described_devices.hpp"
#include "support/shell.hpp"
#include "support/temp_dirs.hpp"
#include "tuner/problem/models.hpp"
#include "tuner/problem/problem.hpp"

namespace {

using moe::testing::fresh_temp_dir;
using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;
namespace fs = std::filesystem;

std::string exe() { return std::string("'") + MOEBENCH_EXE + "'"; }

// A small gmm problem: four experts of 32 rows, so the curated space offers a wgmma tile too.
const std::string kSmallGmm = " --tokens 64 --experts 4 --topk 2 --hidden 64 --intermediate 64 --align 8";

TEST(EmuCli, SweepRouterValidatesEveryConfigOfTheSpace) {
  const fs::path d = fresh_temp_dir("emu-sweep-router");
  // Tables would land under MOEBENCH_CONFIG_DIR: it must stay empty.
  const auto r = sh("cd " + quote(d) + " && MOEBENCH_CONFIG_DIR=" + quote(d / "tables") + " " + exe() +
                    " sweep router --backend emu --model deepseek-v3 --tokens 1,64 --quiet --out " + quote(d / "out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tables: none written (the emu backend validates, it does not time)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "tables") && !fs::is_empty(d / "tables"));
  EXPECT_FALSE(fs::exists(d / "configs"));
  const auto res = nlohmann::json::parse(slurp(d / "out" / "results.json"));
  EXPECT_EQ(res["meta"]["backend"], "emu");
  // Every config of the cuda space for the preset at each token count, each validated, none timed.
  const moe::FamilyDesc& f = moe::family("router");
  std::size_t want = 0;
  for (std::int64_t t : {1, 64}) {
    moe::Params pr = moe::tuner::problem_for(f, moe::tuner::load_model("deepseek-v3"), moe::Params{}, false);
    pr.set("tokens", t);
    pr = moe::complete(f.problem_params, pr, "test");
    want += f.need_backend(moe::Backend::cuda).space(pr, moe::testing::described_h100(), false).size();
  }
  EXPECT_EQ(res["records"].size(), want);
  for (auto& rec : res["records"]) {
    EXPECT_EQ(rec["status"], "ok") << rec.dump();
    EXPECT_TRUE(rec["stats"].is_null()) << rec.dump();
    EXPECT_TRUE(rec["validation"]["ok"].get<bool>()) << rec.dump();
  }
  const std::string summary = slurp(d / "out" / "summary.md");
  EXPECT_NE(summary.find("validation only"), std::string::npos) << summary;
  EXPECT_NE(summary.find("times nothing (every record's times are null) and writes no config tables"), std::string::npos)
      << summary;
}

TEST(EmuCli, RunGmmValidatesAnMmaConfig) {
  const auto r = sh(exe() + " run gmm --backend emu" + kSmallGmm + " --config kernel=mma,block_m=32,block_n=64,block_k=64,"
                    "warps_m=1,warps_n=4,stages=4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time     not measured"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not emulated"), std::string::npos) << r.out;
}

// `--config kernel=wgmma` alone: the mma-only parameters are not demanded and the tile comes
// from the problem's space; a tile parameter the user names is kept.
TEST(EmuCli, RunGmmFillsAWgmmaConfigGivenOnlyItsKernel) {
  auto r = sh(exe() + " run gmm --backend emu" + kSmallGmm + " --config kernel=wgmma");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel=wgmma"), std::string::npos) << r.out;
  r = sh(exe() + " run gmm --backend emu" + kSmallGmm + " --config kernel=wgmma,block_n=256");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("block_n=256"), std::string::npos) << r.out;
  // A config no tile of the space agrees with is still refused, saying why.
  r = sh(exe() + " run gmm --backend emu" + kSmallGmm + " --config kernel=wgmma,block_n=64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("is invalid for this problem"), std::string::npos) << r.out;
}

TEST(EmuCli, RunFp8GmmAndDispatchOfAPresetValidate) {
  // fp8 end to end on the emu backend: the decode kernel (up fuses h's requantization by
  // default, down takes the routed weight) and the quantizing gather, each against the reference.
  // An expert-parallel slice keeps the weights small; the kernels see the preset's own shapes.
  for (const char* stage : {"up", "down"}) {
    const auto r = sh(exe() + " run gmm --model qwen3-30b-a3b --ep 8 --dtype fp8 --tokens 4 --backend emu --stage " + stage);
    ASSERT_EQ(r.code, 0) << stage << "\n" << r.out;
    EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("block_k=128"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("not emulated"), std::string::npos) << r.out;
  }
  const auto r = sh(exe() + " run dispatch --model qwen3-30b-a3b --dtype fp8 --tokens 4 --backend emu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
}

TEST(EmuCli, RunGmmReportsAWgmmaConfigAsNotEmulatedWithItsKernelsChecked) {
  const auto r = sh(exe() + " run gmm --backend emu" + kSmallGmm + " --config kernel=wgmma,block_m=64,block_n=128,"
                    "block_k=64,schedule=pingpong,warps_m=2,warps_n=2,stages=3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("not emulated: the grouped GEMM is CUTLASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
}

TEST(EmuCli, SweepGmmMarksWgmmaNotEmulatedTimesNullNoTables) {
  const fs::path d = fresh_temp_dir("emu-sweep-gmm");
  const auto r = sh("cd " + quote(d) + " && " + exe() + " sweep gmm --backend emu" + kSmallGmm + " --quiet --out " +
                    quote(d / "out"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(d / "configs"));
  const auto res = nlohmann::json::parse(slurp(d / "out" / "results.json"));
  std::set<std::string> kernels;
  for (auto& rec : res["records"]) {
    EXPECT_TRUE(rec["stats"].is_null()) << rec.dump();
    EXPECT_TRUE(rec["validation"]["ok"].get<bool>()) << rec.dump();  // the setup and silu kernels were checked
    const std::string k = rec["config"]["kernel"];
    kernels.insert(k);
    if (k == "wgmma") {
      EXPECT_EQ(rec["status"], "not emulated") << rec.dump();
      EXPECT_NE(rec.value("error", "").find("CUTLASS"), std::string::npos) << rec.dump();
    } else {
      EXPECT_EQ(rec["status"], "ok") << rec.dump();
    }
  }
  EXPECT_EQ(kernels, (std::set<std::string>{"mma", "wgmma"}));
  EXPECT_NE(slurp(d / "out" / "summary.md").find("not emulated: the grouped GEMM is CUTLASS"), std::string::npos);
}

TEST(EmuCli, RefusesWhatItCannotDo) {
  // A prefill shape would take hours: refused up front, naming a token count that fits.
  auto r = sh(exe() + " run gmm --backend emu --tokens 4096 --experts 8 --topk 2 --hidden 256 --intermediate 128");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench: error: gmm at tokens=4096 would take about"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("use --tokens 2048 or fewer"), std::string::npos) << r.out;
  // deepseek-v3's gmm at decode: refused too, with the token count that fits.
  r = sh(exe() + " run gmm --backend emu --model deepseek-v3 --tokens 64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("would take about"), std::string::npos) << r.out;
  // No GPU flags, no tables, no moe-layer.
  r = sh(exe() + " run router --backend emu --device 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the backend is emu"), std::string::npos) << r.out;
  r = sh(exe() + " sweep router --backend emu --tokens 1 --tables /tmp/x --out /tmp/moebench-emu-never");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("writes no tables"), std::string::npos) << r.out;
  // The layer's time is its stages': deepseek-v3's gmm makes it too slow to emulate.
  r = sh(exe() + " run moe-layer --backend emu --model deepseek-v3 --tokens 64");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("moebench: error: moe-layer at tokens=64 would take about"), std::string::npos) << r.out;
}

// --dry-run plans only what the sweep would run: a point too slow to emulate, or --tables, is
// refused by both alike, before any folder is made.
TEST(EmuCli, DryRunRefusesWhatTheSweepRefuses) {
  const fs::path d = fresh_temp_dir("emu-dry-run");
  const auto error_line = [](const std::string& out) {
    const auto at = out.find("moebench: error: ");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  const std::string slow = exe() + " sweep gmm --backend emu --tokens 1,4096 --experts 8 --topk 2 --hidden 256 "
                                   "--intermediate 128 --out " + quote(d / "out");
  const auto dry = sh(slow + " --dry-run"), real = sh(slow);
  EXPECT_EQ(dry.code, 2) << dry.out;
  EXPECT_EQ(real.code, 2) << real.out;
  EXPECT_NE(error_line(dry.out).find("gmm at tokens=4096 would take about"), std::string::npos) << dry.out;
  EXPECT_EQ(error_line(dry.out), error_line(real.out));
  EXPECT_EQ(dry.out.find("plan:"), std::string::npos) << dry.out;
  const std::string tables = exe() + " sweep router --backend emu --tokens 1 --tables " + quote(d / "t") + " --out " +
                             quote(d / "out");
  const auto dry_tables = sh(tables + " --dry-run"), real_tables = sh(tables);
  EXPECT_EQ(dry_tables.code, 2) << dry_tables.out;
  EXPECT_NE(error_line(dry_tables.out).find("writes no tables"), std::string::npos) << dry_tables.out;
  EXPECT_EQ(error_line(dry_tables.out), error_line(real_tables.out));
  EXPECT_FALSE(fs::exists(d / "out"));
  EXPECT_FALSE(fs::exists(d / "t"));
  // What fits is still planned.
  const auto fits = sh(exe() + " sweep gmm --backend emu --tokens 1,64 --experts 8 --topk 2 --hidden 256 --intermediate 128 --dry-run");
  EXPECT_EQ(fits.code, 0) << fits.out;
  EXPECT_NE(fits.out.find("plan: 1 problem x 2 token counts"), std::string::npos) << fits.out;
  fs::remove_all(d);
}

// The layer under the emulator: every stage's cuda kernel source in turn, at the stages' default
// configs (no tables), validated end to end; bf16 and fp8 (quantizing gather, requantized h).
TEST(EmuCli, RunsTheLayerEndToEnd) {
  for (const char* dt : {"bf16", "fp8"}) {
    const auto r = sh(exe() + " run moe-layer --backend emu --model qwen3-30b-a3b --ep 8 --tokens 3 --seed 5 --dtype " + dt);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("stage    gmm_up: block_k="), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(default: no table)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  }
}

// The same layer through the decode front (path=decode): one kernel in place of router and
// dispatch, then the gmm stages and combine; refused past 64 tokens, saying why.
TEST(EmuCli, RunsTheLayerThroughTheDecodeFront) {
  for (const char* dt : {"bf16", "fp8"}) {
    const auto r = sh(exe() + " run moe-layer --backend emu --model qwen3-30b-a3b --ep 8 --tokens 3 --seed 5 --dtype " + dt +
                      " --config path=decode");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("validate PASS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("path     decode: one front kernel"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("stage    router:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("stage    gmm_up: block_k="), std::string::npos) << r.out;
  }
  const auto big = sh(exe() + " run moe-layer --backend emu --model qwen3-30b-a3b --ep 8 --tokens 65 --config path=decode");
  EXPECT_NE(big.code, 0) << big.out;
  EXPECT_NE(big.out.find("at most 64 tokens"), std::string::npos) << big.out;
}

}  // namespace
