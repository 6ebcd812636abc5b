// The quick start writes its tables to results/quickstart/configs; the lookup it prints and the
// README's lookup example must read them there, and that pair of commands must find the entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "support/shell.hpp"

namespace fs = std::filesystem;

namespace {

using moe::testing::quote;
using moe::testing::sh;
using moe::testing::slurp;

TEST(QuickstartLookup, ScriptAndReadmeLookWhereTheSweepWrote) {
  const std::string script = slurp(fs::path(MOEBENCH_SOURCE_DIR) / "scripts/quickstart.sh");
  EXPECT_NE(script.find("out=${MOEBENCH_OUT:-$root/results/quickstart}"), std::string::npos);
  const std::regex sweep(R"(sweep all [^\n]*--tables "\$out/configs")");
  EXPECT_EQ(std::distance(std::sregex_iterator(script.begin(), script.end(), sweep), std::sregex_iterator()), 2)
      << "both sweeps (GPU and cpu) write to $out/configs";
  EXPECT_NE(script.find("lookup gmm --model qwen3-30b-a3b --tokens ${tokens##*,} --tables $out/configs"), std::string::npos)
      << "the printed lookup reads what the sweep wrote";
  const std::string readme = slurp(fs::path(MOEBENCH_SOURCE_DIR) / "README.md");
  EXPECT_NE(readme.find("moebench lookup gmm --model qwen3-30b-a3b --tokens 48 --tables results/quickstart/configs"),
            std::string::npos);
}

TEST(QuickstartLookup, TheLookupFindsWhatTheSweepWrote) {
  const fs::path d = fs::temp_directory_path() / ("moebench-qs-" + std::to_string(::getpid()));
  fs::remove_all(d);
  const std::string exe = MOEBENCH_EXE, shape = " --model qwen3-30b-a3b --experts 8 --topk 2 --hidden 64 --intermediate 32";
  auto r = sh(exe + " sweep gmm" + shape + " --tokens 16,64 --backend cpu --budget 2 --quiet --out " + quote(d) +
              " --tables " + quote(d / "configs"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = sh("cd " + quote(d) + " && " + exe + " lookup gmm" + shape + " --tokens 48 --backend cpu --tables " + quote(d / "configs"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(": nearest"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry:  64 tokens"), std::string::npos) << r.out;
  fs::remove_all(d);
}

}  // namespace
