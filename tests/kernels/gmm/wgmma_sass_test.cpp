// The built CUTLASS grouped GEMMs read back with cuobjdump (from NVIDIA's wheel, installed by
// scripts/setup.sh): every kernel of every wgmma object must issue wgmma (HGMMA; QGMMA on E4M3
// operands for the fp8 ones) and TMA loads (UTMALDG), and use no local memory or stack (a spill
// there would cost the k-loop dearly).
// This is what can be proven about the Hopper kernels without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmm/wgmma/wgmma_configs.hpp"

namespace moe {
namespace {

namespace fs = std::filesystem;

std::string capture(const std::string& cmd, int* status) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  std::string out;
  if (!p) {
    *status = -1;
    return out;
  }
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
  *status = pclose(p.release());
  return out;
}

std::vector<fs::path> wgmma_objects() {
  std::vector<fs::path> v;
  const fs::path dir = fs::path(MOEBENCH_BUILD_DIR) / "CMakeFiles/moe_kernels.dir/kernels/gmm/wgmma";
  if (!fs::exists(dir)) return v;
  for (auto& f : fs::directory_iterator(dir)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("wgmma_gemm_", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".cu.o")
      v.push_back(f.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

// The SASS of each function, by name ("Function : <mangled>" opens a section).
std::vector<std::pair<std::string, std::string>> functions(const std::string& sass) {
  std::vector<std::pair<std::string, std::string>> v;
  const std::string tag = "Function : ";
  std::size_t at = sass.find(tag);
  while (at != std::string::npos) {
    const std::size_t name_end = sass.find('\n', at);
    const std::size_t next = sass.find(tag, name_end);
    v.emplace_back(sass.substr(at + tag.size(), name_end - at - tag.size()),
                   sass.substr(name_end, next == std::string::npos ? std::string::npos : next - name_end));
    at = next;
  }
  return v;
}

TEST(WgmmaSass, EveryInstantiationUsesWgmmaAndTmaWithoutLocalMemory) {
  const std::string cuobjdump = MOEBENCH_CUOBJDUMP, nvdisasm = MOEBENCH_NVDISASM;
  if (cuobjdump.empty() || nvdisasm.empty())
    GTEST_SKIP() << "cuobjdump or nvdisasm not found: run scripts/setup.sh (it unpacks NVIDIA's wheels)";
  // cuobjdump -sass runs nvdisasm, which the wheel does not put on PATH.
  const std::string sass_env = "NVDISASM_PATH='" + fs::path(nvdisasm).parent_path().string() + "' ";
  const auto objs = wgmma_objects();
  // One object per instantiation (a shape, and fp8 down's bf16-output variant of a shape): one
  // added without its object (or the reverse) shows.
  std::size_t built = 0;
  for (const auto& e : gmm::wgmma::entries()) built += 1 + (e.fp8_down.plan ? 1 : 0);
  ASSERT_EQ(objs.size(), built) << "wgmma_gemm_*.cu.o under " << MOEBENCH_BUILD_DIR;
  for (const auto& obj : objs) {
    int st = 0;
    const std::string sass = capture(sass_env + "'" + cuobjdump + "' -sass '" + obj.string() + "'", &st);
    ASSERT_EQ(st, 0) << sass;
    int gemms = 0;
    for (const auto& [name, code] : functions(sass)) {
      if (name.find("GemmUniversal") == std::string::npos) continue;
      ++gemms;
      // bf16/f16 wgmma is HGMMA; e4m3 wgmma is QGMMA with both operand types E4M3.
      const bool fp8 = obj.filename().string().find("_fp8_") != std::string::npos;
      EXPECT_NE(code.find(fp8 ? ".E4M3.E4M3" : "HGMMA"), std::string::npos) << obj.filename() << ": no wgmma in " << name;
      if (fp8) EXPECT_EQ(code.find("HGMMA"), std::string::npos) << obj.filename() << ": a 16-bit wgmma in " << name;
      EXPECT_NE(code.find("UTMALDG"), std::string::npos) << obj.filename() << ": no TMA load in " << name;
    }
    EXPECT_GE(gemms, 1) << obj.filename() << " holds no CUTLASS GEMM kernel";

    const std::string res = capture("'" + cuobjdump + "' -res-usage '" + obj.string() + "'", &st);
    ASSERT_EQ(st, 0) << res;
    int seen = 0;
    for (std::size_t at = res.find("REG:"); at != std::string::npos; at = res.find("REG:", at + 1)) {
      const std::string line = res.substr(at, res.find('\n', at) - at);
      ++seen;
      EXPECT_NE(line.find("STACK:0 "), std::string::npos) << obj.filename() << ": " << line;
      EXPECT_NE(line.find("LOCAL:0 "), std::string::npos) << obj.filename() << ": " << line;
    }
    EXPECT_GE(seen, gemms) << res;
  }
}

}  // namespace
}  // namespace moe
