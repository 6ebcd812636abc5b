// The tree's layering, checked on the sources: tuner/'s folders form layers (a lower one never
// includes a higher one), kernels/ never reaches into the tuner, the app or the tests, a
// family's kernel kinds (kernels/gmm/mma/, wgmma/...) stay out of each other, and the emulator
// stands below everything. The checker is run on the real tree and on a copy with a
// planted upward include, so a checker that finds nothing cannot pass. No source file grows past
// ~500 lines (checked the same way, on the tree and on a planted long file).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/temp_dirs.hpp"

namespace {

namespace fs = std::filesystem;

// tuner/'s layers, lowest first; tuner/README.md says the same in words.
const std::vector<std::string> kTunerLayers = {"base", "problem", "measure", "search", "store", "run"};

// A family's subfolders hold one kernel kind each (kernels/gmm/README.md): a kind includes its own
// folder and its family's top level, never another kind's folder, unless it is built on that
// kind (listed here). The family's top level (its backends) may include every kind.
// cublas/ runs the libraries' GEMMs and then wgmma's epilogue kernels (silu*up, the fp8 requant).
const std::map<std::string, std::vector<std::string>> kKindBuiltOn = {{"gmm/fp8_mma", {"gmm/mma"}},
                                                                       {"gmm/w4_mma", {"gmm/mma"}},
                                                                       {"gmm/cublas", {"gmm/wgmma"}}};

struct Include {
  fs::path file;
  int line;
  std::string target;
};

std::vector<Include> quoted_includes(const fs::path& root, const std::string& area) {
  static const std::regex inc(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::vector<Include> out;
  if (!fs::exists(root / area)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root / area)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
    std::ifstream in(e.path());
    std::string text;
    for (int n = 1; std::getline(in, text); ++n) {
      std::smatch m;
      if (std::regex_search(text, m, inc)) out.push_back({fs::relative(e.path(), root), n, m[1]});
    }
  }
  return out;
}

bool starts_with_any(const std::string& s, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return s.rfind(p, 0) == 0; });
}

// One line per include that goes against the layering, "file:line includes target (why)".
std::vector<std::string> layering_violations(const fs::path& root) {
  std::vector<std::string> bad;
  auto say = [&](const Include& i, const std::string& why) {
    bad.push_back(i.file.string() + ":" + std::to_string(i.line) + " includes " + i.target + " (" + why + ")");
  };
  const std::vector<std::string> above_kernels = {"tuner/", "app/", "tests/", "support/"};
  static const std::regex kind_file(R"(^kernels/([a-z_]+/[a-z0-9_]+)/)"), kind_header(R"(^([a-z_]+/[a-z0-9_]+)/)");
  for (const auto& i : quoted_includes(root, "kernels")) {
    if (starts_with_any(i.target, above_kernels)) say(i, "kernels/ is the library: it never uses the tuner, app or tests");
    const std::string file = i.file.generic_string();
    std::smatch in, to;
    if (!std::regex_search(file, in, kind_file) || !std::regex_search(i.target, to, kind_header) || to[1] == in[1])
      continue;
    const std::string from = in[1];
    const auto built_on = kKindBuiltOn.find(from);
    if (built_on != kKindBuiltOn.end() &&
        std::find(built_on->second.begin(), built_on->second.end(), to[1]) != built_on->second.end())
      continue;
    say(i, "kernels/" + from + " is one kernel kind: it includes its own folder and its family's, not kernels/" +
               std::string(to[1]));
  }
  for (const auto& i : quoted_includes(root, "emu")) {
    const bool own = i.target.rfind("emu/", 0) == 0 || i.target.find('/') == std::string::npos;
    if (!own) say(i, "emu/ stands below the kernels: it includes only its own headers");
  }
  for (const auto& i : quoted_includes(root, "tuner")) {
    if (starts_with_any(i.target, {"app/", "tests/", "support/"})) say(i, "the tuner never uses the app or tests");
    const std::string from = i.file.parent_path().filename().string();
    const auto rank = [](const std::string& layer) {
      return std::find(kTunerLayers.begin(), kTunerLayers.end(), layer) - kTunerLayers.begin();
    };
    if (i.file.parent_path().parent_path() != "tuner" || rank(from) == static_cast<long>(kTunerLayers.size())) {
      say(i, "tuner/ sources live in one of its layer folders");
      continue;
    }
    static const std::regex to_layer(R"(^tuner/([a-z_]+)/)");
    std::smatch m;
    if (!std::regex_search(i.target, m, to_layer)) {
      if (i.target.rfind("tuner/", 0) == 0) say(i, "a tuner header outside the layer folders");
      continue;
    }
    if (rank(m[1]) > rank(from)) say(i, "tuner/" + from + " is below tuner/" + std::string(m[1]));
  }
  return bad;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(Layout, TheTreeKeepsItsLayers) {
  const auto bad = layering_violations(MOEBENCH_SOURCE_DIR);
  EXPECT_TRUE(bad.empty()) << joined(bad);
}

TEST(Layout, EveryTunerFolderIsALayerAndSaysWhatItOwns) {
  const fs::path tuner = fs::path(MOEBENCH_SOURCE_DIR) / "tuner";
  ASSERT_TRUE(fs::exists(tuner / "README.md"));
  std::vector<std::string> seen;
  for (const auto& e : fs::directory_iterator(tuner)) {
    if (!e.is_directory()) continue;
    const std::string name = e.path().filename().string();
    seen.push_back(name);
    EXPECT_NE(std::find(kTunerLayers.begin(), kTunerLayers.end(), name), kTunerLayers.end())
        << "tuner/" << name << " is not one of the layers this test knows";
    EXPECT_TRUE(fs::exists(e.path() / "README.md")) << "tuner/" << name << " has no README saying what it owns";
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::string> want = kTunerLayers;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(seen, want);
  for (const auto& e : fs::directory_iterator(tuner))
    EXPECT_FALSE(e.is_regular_file() && e.path().extension() != ".md")
        << e.path().filename() << " sits in tuner/ itself, outside the layers";
}

// The checker on a copy of the sources, with one upward include planted per rule.
TEST(Layout, APlantedUpwardIncludeIsFound) {
  const fs::path root = moe::testing::fresh_temp_dir("layout");
  for (const char* area : {"kernels", "emu", "tuner"})
    fs::copy(fs::path(MOEBENCH_SOURCE_DIR) / area, root / area, fs::copy_options::recursive);
  ASSERT_TRUE(layering_violations(root).empty());

  auto plant = [&](const fs::path& file, const std::string& line) {
    std::ofstream(root / file, std::ios::app) << "\n" << line << "\n";
  };
  plant("tuner/base/units.hpp", "#include \"tuner/run/runner.hpp\"");
  auto bad = layering_violations(root);
  ASSERT_EQ(bad.size(), 1u) << joined(bad);
  EXPECT_NE(bad[0].find("tuner/base/units.hpp:"), std::string::npos) << bad[0];
  EXPECT_NE(bad[0].find("tuner/base is below tuner/run"), std::string::npos) << bad[0];

  plant("tuner/store/journal.hpp", "#include \"tuner/search/plan.hpp\"");  // downward: fine
  EXPECT_EQ(layering_violations(root).size(), 1u);
  plant("tuner/measure/stats.hpp", "#include \"tuner/store/results.hpp\"");
  EXPECT_EQ(layering_violations(root).size(), 2u);
  plant("kernels/router/spec.hpp", "#include \"tuner/measure/harness.hpp\"");
  plant("emu/simt_emulator.hpp", "#include \"moe/family.hpp\"");
  bad = layering_violations(root);
  EXPECT_EQ(bad.size(), 4u) << joined(bad);
  // The family's top level over its kinds, a kind over its own folder, the family and the kind
  // it is built on: fine. One kind over another: found.
  plant("kernels/gmm/cuda_backend.cpp", "#include \"gmm/wgmma/wgmma_plan.cuh\"");
  plant("kernels/gmm/wgmma/wgmma_plan.cuh", "#include \"gmm/wgmma/wgmma_failure.hpp\"");
  plant("kernels/gmm/wgmma/wgmma_plan.cuh", "#include \"gmm/spec.hpp\"");
  plant("kernels/gmm/fp8_mma/fp8_mma_kernel.cuh", "#include \"gmm/mma/cuda_launch.cuh\"");
  EXPECT_EQ(layering_violations(root).size(), 4u) << joined(layering_violations(root));
  plant("kernels/gmm/wgmma/wgmma_kernels.cuh", "#include \"gmm/mma/cuda_configs.hpp\"");
  plant("kernels/gmm/mma/cuda_kernel.cuh", "#include \"gmm/fp8_mma/fp8_mma_configs.hpp\"");
  bad = layering_violations(root);
  ASSERT_EQ(bad.size(), 6u) << joined(bad);
  EXPECT_NE(joined(bad).find("kernels/gmm/wgmma/wgmma_kernels.cuh:"), std::string::npos) << joined(bad);
  EXPECT_NE(joined(bad).find("kernels/gmm/wgmma is one kernel kind: it includes its own folder and its family's, "
                             "not kernels/gmm/mma"),
            std::string::npos)
      << joined(bad);
  EXPECT_NE(joined(bad).find("not kernels/gmm/fp8_mma"), std::string::npos) << joined(bad);
  fs::remove_all(root);
}

// Files over `limit` lines under root/area with one of `exts`, "file: N lines" each. A file that
// long holds more than one concept: it splits by what its parts do.
std::vector<std::string> long_files(const fs::path& root, const std::string& area, const std::vector<std::string>& exts,
                                    int limit) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root / area)) {
    if (!e.is_regular_file() || std::find(exts.begin(), exts.end(), e.path().extension().string()) == exts.end())
      continue;
    std::ifstream in(e.path());
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    if (n > limit) out.push_back(fs::relative(e.path(), root).string() + ": " + std::to_string(n) + " lines");
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kSourceExts = {".cpp", ".hpp", ".cu", ".cuh", ".h"};

// The product's sources stay under ~500 lines a file (tests may run longer), the kernel report's
// package under 300 a module.
TEST(Layout, NoSourceFileIsLong) {
  const fs::path root = MOEBENCH_SOURCE_DIR;
  std::vector<std::string> bad;
  for (const char* area : {"kernels", "tuner", "app", "emu", "python"})
    for (const auto& f : long_files(root, area, kSourceExts, 500)) bad.push_back(f);
  for (const auto& f : long_files(root, "scripts/static_report", {".py"}, 300)) bad.push_back(f);
  for (const auto& f : long_files(root, "python", {".py"}, 300)) bad.push_back(f);
  EXPECT_TRUE(bad.empty()) << joined(bad);
}

TEST(Layout, ALongFileIsFound) {
  const fs::path root = moe::testing::fresh_temp_dir("layout-long");
  fs::create_directories(root / "kernels" / "router");
  std::ofstream(root / "kernels" / "router" / "short.hpp") << std::string(500, '\n');
  std::ofstream(root / "kernels" / "router" / "notes.md") << std::string(900, '\n');
  EXPECT_TRUE(long_files(root, "kernels", kSourceExts, 500).empty());
  std::ofstream(root / "kernels" / "router" / "long.cuh") << std::string(501, '\n');
  EXPECT_EQ(long_files(root, "kernels", kSourceExts, 500), std::vector<std::string>{"kernels/router/long.cuh: 501 lines"});
  fs::remove_all(root);
}

}  // namespace
