// The host half of the 4-bit decode kernel (w4_mma_kernel.cuh): which configs can run a problem
// and why not, its small space, the workspace, and planning and launching a call.
#include <algorithm>
#include <iterator>

#include "gmm/alignment.hpp"
#include "gmm/mma/decode_space.hpp"
#include "gmm/w4_mma/w4_mma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm::w4_mma {

namespace {

constexpr int kSplits[] = {1, 2, 4, 8};
// Past this many partial bytes split-K is not a decode problem any more.
constexpr double kMaxWorkspace = 1.0e9;

std::string tile_str(const cuda::TileShape& t) {
  return "block_m=" + std::to_string(t.bm) + " block_n=" + std::to_string(t.bn) + " block_k=" + std::to_string(t.bk) +
         " warps_n=" + std::to_string(t.warps_n) + " stages=" + std::to_string(t.stages);
}

std::size_t partial_bytes(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  if (c.split == 1) return 0;
  return static_cast<std::size_t>(c.split) * static_cast<std::size_t>(rows) * static_cast<std::size_t>(s.n_w()) * sizeof(float);
}

std::size_t pad_bytes(const GmmSpec& s, std::int64_t rows) { return s.biased() ? pad_rows_bytes(rows) : 0; }

const char* dtype_str(const GmmSpec& s) { return s.wq == WeightFormat::mxfp4 ? "mxfp4" : "int4"; }

}  // namespace

std::vector<cuda::TileShape> tiles() {
  // Decode's 16- and 32-row tiles, then prefill's 64- and 128-row ones (eight warps along N).
  return {{16, 128, 128, 1, 4, 4}, {16, 128, 64, 1, 4, 4}, {16, 64, 32, 1, 4, 4}, {32, 128, 64, 1, 4, 4},
          {64, 128, 64, 1, 8, 3},  {128, 128, 64, 1, 8, 3}};
}

std::string invalid_reason(const GmmSpec& s, const cuda::Config& c, const DeviceInfo& dev) {
  const std::string who = std::string(dtype_str(s)) + " mma";
  const auto all = tiles();
  if (std::find(all.begin(), all.end(), c.shape) == all.end()) {
    std::string built;
    for (auto& t : all) built += (built.empty() ? "" : "; ") + tile_str(t);
    return who + ": no kernel with " + tile_str(c.shape) + " warps_m=" + std::to_string(c.shape.warps_m) +
           " (warps_m=1); built: " + built;
  }
  if (std::string why = expert_fn_device_reason(s); !why.empty()) return who + ": " + why;
  if (c.group_m != 1) return who + " walks an M-tile's N-tiles in a row: group_m must be 1";
  if (s.k_dim() % c.shape.bk != 0)
    return who + ": block_k=" + std::to_string(c.shape.bk) + " needs K (" + std::to_string(s.k_dim()) +
           ", the " + (s.down ? "intermediate" : "hidden") + " size) to be a multiple of " + std::to_string(c.shape.bk) +
           ": pick a block_k dividing it (32 divides every 4-bit shape)";
  // Up's tiles hold whole h columns of gate and up rows: none may overhang I (down's may, D).
  if (!s.down && s.n_out() % (c.shape.bn / 2) != 0)
    return who + " up: block_n=" + std::to_string(c.shape.bn) + " needs I (" + std::to_string(s.n_out()) +
           ") to be a multiple of " + std::to_string(c.shape.bn / 2) + ": pick a narrower block_n";
  if (s.n_w() * (s.k_dim() / 2) >= (std::int64_t{1} << 32))
    return "one expert's 4-bit weights (" + std::to_string(s.n_w()) + " x " + std::to_string(s.k_dim()) +
           ") are 4 GiB or more, which the 4-bit mma kernel addresses with 32-bit offsets";
  if (std::find(std::begin(kSplits), std::end(kSplits), c.split) == std::end(kSplits))
    return who + ": split_k must be one of 1,2,4,8";
  if (c.split > 1 && c.shape.bm > 32)
    return who + ": block_m=" + std::to_string(c.shape.bm) + " is a prefill tile, whose rows fill the SMs: split_k must be 1";
  const std::int64_t slices = s.k_dim() / c.shape.bk;
  if (c.split > slices)
    return "split_k=" + std::to_string(c.split) + " is more than the " + std::to_string(slices) +
           " K slices of block_k=" + std::to_string(c.shape.bk);
  if (static_cast<double>(partial_bytes(s, c, s.max_rows())) > kMaxWorkspace)
    return who + " needs " + std::to_string(static_cast<long long>(partial_bytes(s, c, s.max_rows()) >> 20)) +
           " MiB of fp32 partials at this token count: use split_k=1";
  const std::size_t smem = w4_mma::smem_bytes(c.shape);
  if (dev.backend == Backend::cuda && dev.smem_optin > 0 && smem > dev.smem_optin)
    return "4-bit tile " + tile_str(c.shape) + " needs " + std::to_string(smem) + " bytes of shared memory; " + dev.name +
           " allows " + std::to_string(dev.smem_optin);
  return {};
}

std::size_t workspace_bytes(const GmmSpec& s, const cuda::Config& c) {
  return cuda::map_bytes(s.max_rows(), c.shape.bm, s.e_local()) + pad_bytes(s, s.max_rows()) +
         partial_bytes(s, c, s.max_rows());
}

std::vector<cuda::Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full) {
  return cuda::decode_space(tiles(), kSplits, s.avg_rows_per_expert(), full,
                            [&](const cuda::Config& c) { return w4_mma::invalid_reason(s, c, dev); });
}

cuda::Config default_config(const GmmSpec& s, const DeviceInfo& dev) {
  const double rows = s.avg_rows_per_expert();
  const int bm = rows <= 16 ? 16 : rows <= 64 ? 32 : rows <= 256 ? 64 : 128;
  for (auto& t : tiles())
    if (t.bm == bm && w4_mma::invalid_reason(s, cuda::Config{t, 1, 1}, dev).empty()) return cuda::Config{t, 1, 1};
  for (auto& t : tiles())
    if (w4_mma::invalid_reason(s, cuda::Config{t, 1, 1}, dev).empty()) return cuda::Config{t, 1, 1};
  return cuda::Config{tiles().front(), 1, 1};  // refused, saying why
}

Args plan_args(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  const std::string why = w4_mma::invalid_reason(s, c, DeviceInfo{});
  if (!why.empty()) throw Error("gmm cuda: " + why);
  Args a;
  a.b = cuda::kind_shape_args(s, c, rows, c.shape.bk, "4-bit ");
  a.expert_bytes = static_cast<std::uint32_t>(s.n_w() * (s.k_dim() / 2));
  a.groups = static_cast<int>(s.w_groups());
  a.group_mask = static_cast<int>(s.group / 32 - 1);
  return a;
}

void bind_tensors(Args& a, const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
                  std::size_t ws_bytes) {
  a.b.act = need(in, s.act_name()).as<const std::uint16_t>();
  a.weight = need(in, s.weight_name()).as<const std::uint8_t>();
  a.scale = need(in, s.weight_scale_name()).data;
  a.zeros = s.zero_point ? need(in, s.weight_zero_name()).as<const std::uint32_t>() : nullptr;
  a.b.offsets = need(in, "offsets").as<const std::int32_t>();
  a.b.row_weight = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  a.b.out = need(out, s.out_name()).as<std::uint16_t>();
  a.b.fn.bias = s.biased() ? need(in, s.bias_name()).as<const std::uint16_t>() : nullptr;
  // The tile map, the pad-row flags, then split-K's partials (each a multiple of 16 bytes).
  const std::size_t map = cuda::map_bytes(a.b.rows, c.shape.bm, a.b.experts), pads = pad_bytes(s, a.b.rows),
                    part = partial_bytes(s, c, a.b.rows);
  if (!workspace || ws_bytes < map + pads + part)
    throw Error("gmm cuda: the 4-bit config needs " + std::to_string(map + pads + part) + " bytes of workspace for " +
                std::to_string(a.b.rows) + " rows (the tile map" + (pads ? std::string(", the padding rows' flags") : "") +
                (part ? std::string(", fp32 partials") : "") + "), got " + std::to_string(ws_bytes));
  a.b.tile_map = static_cast<std::int32_t*>(workspace);
  if (pads) a.b.fn.pad_rows = reinterpret_cast<std::uint8_t*>(static_cast<std::byte*>(workspace) + map);
  if (part) a.b.partial = reinterpret_cast<float*>(static_cast<std::byte*>(workspace) + map + pads);
  require_aligned(a.b.act, 16, "cuda", s.act_name(), "cp.async copies 16 bytes");
  require_aligned(a.weight, 16, "cuda", s.weight_name(), "cp.async copies 16 bytes");
  require_aligned(a.scale, 2, "cuda", s.weight_scale_name(), "int4 scales are read as bf16");
  if (a.zeros) require_aligned(a.zeros, 4, "cuda", s.weight_zero_name(), "read as int32");
  require_aligned(a.b.offsets, 4, "cuda", "offsets", "read as int32");
  if (a.b.row_weight) require_aligned(a.b.row_weight, 4, "cuda", "row_weight", "read as fp32");
  if (a.b.fn.bias) require_aligned(a.b.fn.bias, 2, "cuda", s.bias_name(), "read as bf16");
  require_aligned(a.b.out, 4, "cuda", s.out_name(), "two bf16 are stored as one 32-bit word");
  require_aligned(a.b.tile_map, 16, "cuda", "the workspace", "the tile map is read 16 bytes at a time");
  if (a.b.partial) require_aligned(a.b.partial, 8, "cuda", "the split-K workspace", "partials are float2");
}

std::shared_ptr<const Plan> plan(const GmmSpec& s, const cuda::Config& c, std::int64_t rows) {
  auto p = cuda::start_plan<Args>(s, c, rows, &w4_mma::plan_args);
  if (rows == 0) return p;
  // Which rows are padding, before the kernel whose bias would make them non-zero.
  if (s.biased()) p->launches.push_back(cuda::plan_pad_rows(p->args.b));
  const bool mx = s.wq == WeightFormat::mxfp4, fn = !s.plain_expert_fn();
  p->launches.push_back(fn ? plan_main_of<true>(c.shape, s.down, mx, p->args) : plan_main_of<false>(c.shape, s.down, mx, p->args));
  if (c.split > 1) p->launches.push_back(cuda::plan_finalize(p->args.b, s.down, DType::bf16, fn));
  cuda::count_kernels(*p);
  return p;
}

void run(const GmmSpec& s, const cuda::Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t ws_bytes, void* stream, const Plan* planned) {
  cuda::run_kind(s, c, in, out, workspace, ws_bytes, stream, planned, &w4_mma::plan, &w4_mma::bind_tensors, &w4_mma::launch);
}

}  // namespace moe::gmm::w4_mma
