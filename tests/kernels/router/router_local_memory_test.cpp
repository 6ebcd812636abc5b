// The router kernel that each model preset gets by default must keep its row in registers:
// no stack frame (spills, or an array indexed at run time) and no local memory, read from the
// built objects with cuobjdump -res-usage. Skipped where the build found no cuobjdump.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "router/cuda.hpp"
#include "router/cuda_shapes.hpp"
#include "support/router_cases.hpp"

namespace {

using namespace moe;

// Function name -> its "REG:.. STACK:.. ... LOCAL:.." line, over every router object.
std::map<std::string, std::string> router_resource_usage() {
  std::map<std::string, std::string> out;
  for (const char* f : {"16", "32", "wide", "packed"}) {
    const std::string obj =
        std::string(MOEBENCH_BUILD_DIR) + "/CMakeFiles/moe_kernels.dir/kernels/router/cuda_kernels_" + f + ".cu.o";
    const std::string cmd = std::string("\"") + MOEBENCH_CUOBJDUMP + "\" -res-usage \"" + obj + "\" 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    if (!pipe) continue;
    std::array<char, 4096> buf;
    std::string fn;
    while (fgets(buf.data(), buf.size(), pipe.get())) {
      const std::string line(buf.data());
      std::smatch m;
      if (std::regex_search(line, m, std::regex(R"(Function (\S+):)"))) fn = m[1];
      else if (!fn.empty() && line.find("REG:") != std::string::npos) out[fn] = line, fn.clear();
    }
  }
  return out;
}

std::string kernel_name(const router::KernelShape& s) {
  return "_ZN3moe6router4kern13router_kernelILi" + std::to_string(s.lanes) + "ELi" + std::to_string(s.epl) + "ELi" +
         std::to_string(s.vec) + "ELi" + std::to_string(s.esize) + "EEEvNS1_4ArgsE";
}

TEST(RouterKernels, PresetDefaultsUseNoLocalMemory) {
  if (std::string(MOEBENCH_CUOBJDUMP).empty()) GTEST_SKIP() << "no cuobjdump in this build";
  const auto usage = router_resource_usage();
  ASSERT_FALSE(usage.empty()) << "cuobjdump read no router kernel from " << MOEBENCH_BUILD_DIR;
  for (const auto& c : router_cases::presets())
    for (const char* dt : {"bf16", "f16", "f32"}) {
      const RouterSpec sp = RouterSpec::from(
          complete(router_family().problem_params, router_cases::with(c.problem, 64, dt), "router"));
      const int shape = router::cuda_shape_index(sp, router::cuda_default(sp));
      ASSERT_GE(shape, 0) << c.name << " " << dt;
      const std::string fn = kernel_name(router::kShapes[shape]);
      SCOPED_TRACE(c.name + " " + dt + " " + fn);
      const auto it = usage.find(fn);
      ASSERT_NE(it, usage.end()) << "kernel not in the built objects";
      EXPECT_NE(it->second.find("STACK:0 "), std::string::npos) << it->second;
      EXPECT_NE(it->second.find("LOCAL:0 "), std::string::npos) << it->second;
    }
}

}  // namespace
