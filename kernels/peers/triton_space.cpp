#include "peers/triton_space.hpp"

#include <cstdint>

#include "gmm/detail.hpp"
#include "gmm/spec.hpp"

namespace moe::peers {

namespace {

// The lists of vLLM's get_configs_compute_bound (CUDA); SGLang's tuning script uses the same.
const std::vector<std::int64_t> kBlockM = {16, 32, 64, 128, 256};
const std::vector<std::int64_t> kBlockN = {32, 64, 128, 256};
const std::vector<std::int64_t> kBlockK = {64, 128, 256};
const std::vector<std::int64_t> kGroupM = {1, 16, 32, 64};
const std::vector<std::int64_t> kWarps = {4, 8};
const std::vector<std::int64_t> kStages = {2, 3, 4, 5};

bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<ParamSpec> triton_config_params() {
  return {int_param("BLOCK_SIZE_M", 64, 1, 1024, "rows of a program's tile (tokens); a power of two, 16 or more"),
          int_param("BLOCK_SIZE_N", 64, 1, 1024, "output columns of a program's tile; a power of two, 16 or more"),
          int_param("BLOCK_SIZE_K", 64, 1, 1024, "K step of the tile loop; a power of two, 16 or more"),
          int_param("GROUP_SIZE_M", 1, 1, 1024, "M tiles a group of programs walks before the next N tile (L2 reuse)"),
          int_param("num_warps", 4, 1, 32, "warps per program; a power of two"),
          int_param("num_stages", 3, 1, 8, "software pipeline stages of the tile loop")};
}

std::vector<Params> triton_space(const Params& problem, const DeviceInfo& dev) {
  std::vector<Params> out;
  for (auto m : kBlockM)
    for (auto n : kBlockN)
      for (auto k : kBlockK)
        for (auto g : kGroupM)
          for (auto w : kWarps)
            for (auto s : kStages) {
              Params c{{"BLOCK_SIZE_M", m}, {"BLOCK_SIZE_N", n}, {"BLOCK_SIZE_K", k},
                       {"GROUP_SIZE_M", g}, {"num_warps", w},    {"num_stages", s}};
              if (triton_invalid_reason(problem, c, dev).empty()) out.push_back(std::move(c));
            }
  return out;
}

Params triton_default(const Params& problem) {
  const std::int64_t m = problem.i("tokens");
  const std::int64_t experts = problem.i("experts");
  Params c;
  if (problem.has("dtype") && problem.s("dtype") == "fp8") {
    // vLLM's rule for block-scaled fp8 (block_shape [128, 128]) on CUDA, by token count M.
    c.set("BLOCK_SIZE_M", std::int64_t{m <= 64 ? 16 : 64});
    c.set("BLOCK_SIZE_N", std::int64_t{m <= 8 ? 64 : 128});
    c.set("BLOCK_SIZE_K", std::int64_t{128});
    c.set("GROUP_SIZE_M", std::int64_t{m <= 16 ? 1 : 32});
    c.set("num_warps", std::int64_t{4});
    c.set("num_stages", std::int64_t{m <= 4 ? 4 : 3});
    return c;
  }
  // The engines' rule for unquantized weights, by token count M.
  c.set("BLOCK_SIZE_M", m <= 32 ? 16 : m <= 96 ? 32 : m <= 512 ? 64 : 128);
  c.set("BLOCK_SIZE_N", std::int64_t{m <= 64 ? 64 : 128});
  c.set("BLOCK_SIZE_K", std::int64_t{m <= 64 ? 128 : 64});
  c.set("GROUP_SIZE_M", std::int64_t{m / (experts > 0 ? experts : 1) > 128 ? 16 : 1});
  c.set("num_warps", std::int64_t{m <= 128 ? 4 : 8});
  c.set("num_stages", std::int64_t{m <= 32 ? 4 : 3});
  return c;
}

std::string triton_invalid_reason(const Params& problem, const Params& config, const DeviceInfo& dev) {
  const GmmSpec s = GmmSpec::parse(problem);
  if (std::string why = gmm::expert_fn_invalid_reason(s); !why.empty()) return why;
  // fp8: a K step must stay inside one 128-wide scale block (the kernel loads one scale per
  // step), which is the filter vLLM's tuner applies for block_shape [128, 128].
  if (s.fp8 && (config.i("BLOCK_SIZE_K") > 128 || 128 % config.i("BLOCK_SIZE_K") != 0))
    return "BLOCK_SIZE_K=" + std::to_string(config.i("BLOCK_SIZE_K")) +
           " crosses a 128-wide scale block of the fp8 weights: use 16, 32, 64 or 128";
  for (const char* k : {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"}) {
    const std::int64_t v = config.i(k);
    // tl.arange and tl.dot need powers of two of at least 16.
    if (!power_of_two(v) || v < 16) return std::string(k) + "=" + std::to_string(v) + " is not a power of two of 16 or more";
  }
  if (!power_of_two(config.i("num_warps"))) return "num_warps=" + std::to_string(config.i("num_warps")) + " is not a power of two";
  if (dev.backend == Backend::cuda && dev.smem_optin > 0) {
    // The pipelined A and B tiles of every stage live in shared memory.
    const std::int64_t bm = config.i("BLOCK_SIZE_M"), bn = config.i("BLOCK_SIZE_N"), bk = config.i("BLOCK_SIZE_K");
    const std::int64_t bytes = config.i("num_stages") * (bm * bk + bk * bn) * static_cast<std::int64_t>(s.elem_bytes());
    if (static_cast<std::size_t>(bytes) > dev.smem_optin)
      return "its " + std::to_string(config.i("num_stages")) + " stages of tiles need " + std::to_string(bytes / 1024) +
             " KiB of shared memory, the device has " + std::to_string(dev.smem_optin / 1024) + " KiB per block";
  }
  return "";
}

}  // namespace moe::peers
