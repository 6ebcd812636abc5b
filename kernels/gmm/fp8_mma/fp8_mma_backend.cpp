// The host half of the fp8 decode kernel (fp8_mma_kernel.cuh): which configs can run a problem
// and why not, its small space, the workspace, and planning and launching a call.
#include <algorithm>
#include <iterator>

#include "gmm/alignment.hpp"
#include "gmm/mma/decode_space.hpp"
#include "gmm/fp8_mma/fp8_mma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::fp8_mma {

namespace {

constexpr int kSplits[] = {1, 2, 4, 8};
// Past this many partial bytes split-K is not a decode problem any more.
constexpr double kMaxWorkspace = 1.0e9;

std::string tile_str(const cuda::TileShape& t) {
  return "block_m=" + std::to_string(t.bm) + " block_n=" + std::to_string(t.bn) + " warps_n=" + std::to_string(t.warps_n) +
         " stages=" + std::to_string(t.stages);
}

// Split-K's partials (down) or an unfused up's gate|up rows (a slab per split), for `rows`;
// after the tile map.
std::size_t slab_bytes(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  const auto r = static_cast<std::size_t>(rows), nw = static_cast<std::size_t>(s.n_w());
  if (!s.down && fused_up(c.shape)) return 0;
  return s.down && c.split == 1 ? 0 : static_cast<std::size_t>(c.split) * r * nw * sizeof(float);
}

}  // namespace

std::vector<cuda::TileShape> tiles() {
  return {{16, 128, kBlockK, 1, 4, 4}, {16, 256, kBlockK, 1, 8, 3}, {32, 128, kBlockK, 1, 4, 4}, {32, 256, kBlockK, 1, 8, 3}};
}

std::string invalid_reason(const GmmSpec& s, const cuda::Config& c, const DeviceInfo& dev) {
  const auto all = tiles();
  if (std::find(all.begin(), all.end(), c.shape) == all.end()) {
    std::string built;
    for (auto& t : all) built += (built.empty() ? "" : "; ") + tile_str(t);
    return "fp8 mma: no kernel with " + tile_str(c.shape) + " block_k=" + std::to_string(c.shape.bk) +
           " warps_m=" + std::to_string(c.shape.warps_m) + " (block_k=128, one scale block; warps_m=1); built: " + built;
  }
  // cvt.rn.f16x2.e4m3x2 (fp8_mma_primitives.cuh) is sm_89+; a build for older devices holds a
  // kernel that traps.
  if (dev.backend == Backend::cuda && dev.cc_major > 0 && dev.cc_major * 10 + dev.cc_minor < 89)
    return "fp8 mma converts e4m3 with an sm_89+ instruction; " + dev.name + " is sm_" + std::to_string(dev.cc_major) +
           std::to_string(dev.cc_minor) + ": use dtype bf16 there";
  if (c.group_m != 1) return "fp8 mma walks an M-tile's N-tiles in a row: group_m must be 1";
  if (s.n_w() * s.k_dim() >= (std::int64_t{1} << 32))
    return "one expert's fp8 weights (" + std::to_string(s.n_w()) + " x " + std::to_string(s.k_dim()) +
           ") are 4 GiB or more, which the fp8 mma kernel addresses with 32-bit offsets: use kernel=wgmma";
  // Up's tiles hold whole h columns of gate and up rows: none may overhang I (down's may, D).
  if (!s.down && s.n_out() % (c.shape.bn / 2) != 0)
    return "fp8 mma up: block_n=" + std::to_string(c.shape.bn) + " needs I (" + std::to_string(s.n_out()) +
           ") to be a multiple of " + std::to_string(c.shape.bn / 2);
  if (std::find(std::begin(kSplits), std::end(kSplits), c.split) == std::end(kSplits))
    return "fp8 mma: split_k must be one of 1,2,4,8";
  if (!s.down && c.split > 1 && fused_up(c.shape))
    return "fp8 up with block_n=256 requantizes h in its epilogue from whole K sums: split_k must be 1 (block_n=128 "
           "splits K, its silu*up+quant pass sums the splits)";
  if (c.split > s.k_groups())
    return "split_k=" + std::to_string(c.split) + " is more than the " + std::to_string(s.k_groups()) +
           " 128-wide K blocks";
  if (static_cast<double>(slab_bytes(s, c, s.max_rows())) > kMaxWorkspace)
    return "fp8 mma needs " + std::to_string(static_cast<long long>(slab_bytes(s, c, s.max_rows()) >> 20)) +
           " MiB of fp32 workspace at this token count: use split_k=1 or block_n=256";
  const std::size_t smem = fp8_mma::smem_bytes(c.shape);
  if (dev.backend == Backend::cuda && dev.smem_optin > 0 && smem > dev.smem_optin)
    return "fp8 tile " + tile_str(c.shape) + " needs " + std::to_string(smem) + " bytes of shared memory; " + dev.name +
           " allows " + std::to_string(dev.smem_optin);
  return {};
}

std::size_t workspace_bytes(const GmmSpec& s, const cuda::Config& c) {
  return cuda::map_bytes(s.max_rows(), c.shape.bm, s.e_local()) + slab_bytes(s, c, s.max_rows());
}

std::vector<cuda::Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full) {
  return cuda::decode_space(tiles(), kSplits, s.avg_rows_per_expert(), full,
                            [&](const cuda::Config& c) { return fp8_mma::invalid_reason(s, c, dev); });
}

cuda::Config default_config(const GmmSpec& s, const DeviceInfo& dev) {
  // up: 128 h columns per CTA quantize h in the epilogue (no fp32 round trip).
  const int bm = s.avg_rows_per_expert() <= 16 ? 16 : 32;
  cuda::Config c{{bm, s.down ? 128 : 256, kBlockK, 1, s.down ? 4 : 8, s.down ? 4 : 3}, 1, 1};
  if (fp8_mma::invalid_reason(s, c, dev).empty()) return c;
  for (auto& t : tiles())
    if (fp8_mma::invalid_reason(s, cuda::Config{t, 1, 1}, dev).empty()) return cuda::Config{t, 1, 1};
  return c;
}

Args plan_args(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  const std::string why = fp8_mma::invalid_reason(s, c, DeviceInfo{});
  if (!why.empty()) throw Error("gmm cuda: " + why);
  Args a;
  a.b = cuda::kind_shape_args(s, c, rows, fp8_mma::kBlockK, "fp8 ");
  a.expert_bytes = static_cast<std::uint32_t>(s.n_w() * s.k_dim());
  a.up_bytes = static_cast<std::uint32_t>(s.n_out() * s.k_dim());
  a.ue8m0 = s.ue8m0;
  return a;
}

void bind_tensors(Args& a, const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                  std::size_t ws_bytes) {
  a.act = need(in, s.act_name()).as<const std::uint8_t>();
  a.act_scale = need(in, s.act_scale_name()).as<const float>();
  a.weight = need(in, s.weight_name()).as<const std::uint8_t>();
  a.w_scale = need(in, s.weight_scale_name()).as<const float>();
  a.b.offsets = need(in, "offsets").as<const std::int32_t>();
  a.b.row_weight = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  if (s.down) {
    a.b.out = need(out, "y_sorted").as<std::uint16_t>();
  } else {
    a.h = need(out, "h").as<std::uint8_t>();
    a.h_scale = need(out, "h_scale").as<float>();
  }
  // The tile map, then the slab (a multiple of 16 bytes after it).
  const std::size_t map = cuda::map_bytes(a.b.rows, c.shape.bm, a.b.experts), slab = slab_bytes(s, c, a.b.rows);
  if (!workspace || ws_bytes < map + slab)
    throw Error("gmm cuda: the fp8 config needs " + std::to_string(map + slab) + " bytes of workspace for " +
                std::to_string(a.b.rows) + " rows (the tile map" + (slab ? std::string(" and fp32 partials") : "") +
                "), got " + std::to_string(ws_bytes));
  a.b.tile_map = static_cast<std::int32_t*>(workspace);
  if (slab) a.b.partial = reinterpret_cast<float*>(static_cast<std::byte*>(workspace) + map);
  require_aligned(a.act, 16, "cuda", s.act_name(), "cp.async copies 16 bytes");
  require_aligned(a.weight, 16, "cuda", s.weight_name(), "cp.async copies 16 bytes");
  require_aligned(a.b.offsets, 4, "cuda", "offsets", "read as int32");
  if (a.b.out) require_aligned(a.b.out, 4, "cuda", "y_sorted", "two bf16 are stored as one 32-bit word");
  if (a.h) require_aligned(a.h, 16, "cuda", "h", "codes are stored 16 bytes at a time by the quantizing pass");
  require_aligned(a.b.tile_map, 16, "cuda", "the workspace", "the tile map is read 16 bytes at a time");
  if (a.b.partial) require_aligned(a.b.partial, 16, "cuda", "the fp8 workspace", "read as float4");
}

std::shared_ptr<const Plan> plan(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  auto p = cuda::start_plan<Args>(s, c, rows, &fp8_mma::plan_args);
  if (rows == 0) return p;
  p->launches.push_back(plan_main(c.shape, s.down, p->args));
  if (s.down && c.split > 1) p->launches.push_back(cuda::plan_finalize(p->args.b, true, DType::bf16));
  if (!s.down && !fused_up(c.shape)) p->launches.push_back(plan_silu_quant(p->args));
  cuda::count_kernels(*p);
  return p;
}

void run(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t ws_bytes, void* stream, const Plan* planned) {
  cuda::run_kind(s, c, in, out, workspace, ws_bytes, stream, planned, &fp8_mma::plan, &fp8_mma::bind_tensors, &fp8_mma::launch);
}

}  // namespace moe::gmm::fp8_mma
