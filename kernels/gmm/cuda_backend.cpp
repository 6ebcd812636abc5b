// The cuda backend as data: its config parameters, which instantiated tiles suit a problem on
// a device, a safe default, and the host side of a run (tile map, split-K workspace, launches).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "gmm/alignment.hpp"
#include "gmm/cublas/configs.hpp"
#include "gmm/mma/cuda_configs.hpp"
#include "gmm/mma/kind_plan.hpp"
#include "gmm/detail.hpp"
#include "gmm/fp8_mma/fp8_mma_configs.hpp"
#include "gmm/w4_mma/w4_mma_configs.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/cuda_launch_api.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace cuda {

const std::vector<TileEntry>& tiles() {
  static const std::vector<TileEntry> all = [] {
    std::vector<TileEntry> v;
    add_tiles_m16(v);
    add_tiles_m32(v);
    add_tiles_m64(v);
    add_tiles_m128(v);
    add_fn_kernels(v);
    return v;
  }();
  return all;
}

namespace {

// Split-K partials beyond this are not worth it: such problems have rows enough for M tiles.
constexpr double kMaxWorkspace = 1.0e9;

std::string tile_str(const TileShape& t) {
  return std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + " warps " +
         std::to_string(t.warps_m) + "x" + std::to_string(t.warps_n) + " stages " + std::to_string(t.stages);
}

const TileEntry* find(const TileShape& t) {
  for (auto& e : tiles())
    if (e.shape == t) return &e;
  return nullptr;
}

// The kernel of `e` for the problem: the expert-function instantiation unless it is plain.
PlanFn kernel_of(const TileEntry& e, const GmmSpec& s) {
  return s.plain_expert_fn() ? e.get(s.down, s.dtype) : e.get_fn(s.down, s.dtype);
}

std::string shapes_for(const GmmSpec& s) {
  std::string r;
  for (auto& e : tiles())
    if (kernel_of(e, s)) r += (r.empty() ? "" : "; ") + tile_str(e.shape);
  return r;
}

// The workspace: the tile map, the pad-row flags (a biased stage), then split-K's partials.
std::size_t ws_bytes_for(const GmmSpec& s, const Config& c, std::int64_t rows, std::int64_t experts) {
  std::size_t n = map_bytes(rows, c.shape.bm, experts);
  if (s.biased()) n += pad_rows_bytes(rows);
  if (c.split > 1)
    n += static_cast<std::size_t>(c.split) * static_cast<std::size_t>(rows) * static_cast<std::size_t>(s.n_w()) *
         sizeof(float);
  return n;
}

void launch_planned(const PlannedLaunch& p, const KernelArgs& a, void* stream) {
  if (p.grid == 0) return;
  if (p.launch) return p.launch(p, a, stream);
  KernelArgs by_value = a;
  launch_kernel_args(p.func, p.grid, p.threads, p.smem, stream, by_value);
}

}  // namespace

Config parse_config(const Params& c) {
  Config r;
  r.shape = TileShape{static_cast<int>(c.i("block_m")), static_cast<int>(c.i("block_n")),
                      static_cast<int>(c.i("block_k")), static_cast<int>(c.i("warps_m")),
                      static_cast<int>(c.i("warps_n")), static_cast<int>(c.i("stages"))};
  r.split = static_cast<int>(c.i("split_k"));
  r.group_m = static_cast<int>(c.i("group_m"));
  return r;
}

Params config_params(const Config& c) {
  return Params{{"kernel", std::string("mma")},
                {"block_m", std::int64_t{c.shape.bm}},   {"block_n", std::int64_t{c.shape.bn}},
                {"block_k", std::int64_t{c.shape.bk}},   {"warps_m", std::int64_t{c.shape.warps_m}},
                {"warps_n", std::int64_t{c.shape.warps_n}}, {"stages", std::int64_t{c.shape.stages}},
                {"split_k", std::int64_t{c.split}},      {"group_m", std::int64_t{c.group_m}}};
}

// The entries, then the status entry.
std::size_t map_bytes(std::int64_t rows, int bm, std::int64_t experts) {
  return static_cast<std::size_t>((rows + bm - 1) / bm + experts + 1) * 16;
}

bool bind_given_tile_map(const RefMap& in, KernelArgs& a, int bm) {
  const auto plain = in.find(kTileMapInput), early = in.find(kEarlyTileMapInput);
  if (plain != in.end() && early != in.end())
    throw Error(std::string("gmm cuda: inputs ") + kTileMapInput + " and " + kEarlyTileMapInput +
                " both given: pass the call's tile map once");
  const auto it = plain != in.end() ? plain : early;
  if (it == in.end()) return false;
  const TensorRef& m = it->second;
  const std::size_t want = map_bytes(a.rows, bm, a.experts);
  if (m.dtype != DType::i32 || m.nbytes() < want)
    throw Error("gmm cuda: the given tile map holds " + std::to_string(m.nbytes()) + " bytes of " +
                std::string(dtype_name(m.dtype)) + ", block_m=" + std::to_string(bm) + " over " + std::to_string(a.rows) +
                " rows needs " + std::to_string(want) + " of int32");
  require_aligned(m.data, 16, "cuda", it->first.c_str(), "the tile map is read 16 bytes at a time");
  a.tile_map = static_cast<std::int32_t*>(m.data);
  a.map_early = it == early ? 1 : 0;
  return true;
}

std::string map_status_error(const std::int32_t* tile_map, int map_tiles) {
  const std::int32_t* st = tile_map + 4 * static_cast<std::ptrdiff_t>(map_tiles);
  if (st[0] == 0) return {};
  return "gmm: the offsets decrease or leave [0, rows] (" + std::to_string(st[0]) +
         " faults), their segments make " + std::to_string(st[1]) + " M-tiles where " + std::to_string(map_tiles) +
         " fit: the tile map was clamped and the output is not meaningful; pass dispatch's offsets";
}

std::size_t workspace_bytes(const GmmSpec& s, const Config& c) { return ws_bytes_for(s, c, s.max_rows(), s.e_local()); }

std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev) {
  if (s.fp8) return fp8_mma::invalid_reason(s, c, dev);
  if (s.hidden % 8 != 0 || s.intermediate % 8 != 0)
    return "the cuda kernels load 16-byte rows: hidden (" + std::to_string(s.hidden) + ") and intermediate (" +
           std::to_string(s.intermediate) + ") must be multiples of 8; use --backend cpu for this shape";
  if (std::string why = expert_fn_device_reason(s); !why.empty()) return why;
  const TileEntry* e = find(c.shape);
  if (!e || !kernel_of(*e, s))
    return "no " + std::string(dtype_name(s.dtype)) + " kernel" +
           (s.plain_expert_fn() ? std::string() : " computing " + s.expert_fn_str()) + " is built with tile " +
           tile_str(c.shape) + "; built: " + shapes_for(s);
  if (std::find(std::begin(kSplits), std::end(kSplits), c.split) == std::end(kSplits))
    return "split_k must be one of 1,2,3,4,6,8";
  if (std::find(std::begin(kGroupM), std::end(kGroupM), c.group_m) == std::end(kGroupM))
    return "group_m must be one of 1,4,8";
  // A 16-row tile is decode's: the kernel walks its tiles one M-tile at a time (cuda_kernel.cuh).
  if (c.shape.bm == 16 && c.group_m != 1)
    return "16-row tiles walk their M-tiles one at a time: group_m must be 1";
  // The kernel addresses inside one expert's weights and inside the activations with 32-bit
  // element offsets.
  constexpr std::int64_t k32 = std::int64_t{1} << 32;
  if (s.n_w() * s.k_dim() >= k32)
    return "one expert's weights (" + std::to_string(s.n_w()) + " x " + std::to_string(s.k_dim()) +
           ") have 2^32 elements or more, which kernel=mma addresses with 32-bit offsets: use kernel=wgmma";
  if (s.max_rows() * s.k_dim() >= k32)
    return "up to " + std::to_string(s.max_rows()) + " rows of " + std::to_string(s.k_dim()) +
           " elements make 2^32 or more, which kernel=mma addresses with 32-bit offsets: use fewer tokens or kernel=wgmma";
  const std::int64_t k_slices = (s.k_dim() + c.shape.bk - 1) / c.shape.bk;
  if (c.split > k_slices)
    return "split_k=" + std::to_string(c.split) + " is more than the " + std::to_string(k_slices) +
           " K slices of block_k=" + std::to_string(c.shape.bk);
  if (static_cast<double>(workspace_bytes(s, c)) > kMaxWorkspace)
    return "split_k=" + std::to_string(c.split) + " needs " +
           std::to_string(static_cast<long long>(workspace_bytes(s, c) >> 20)) +
           " MiB of fp32 partials at this token count: use split_k=1";
  const std::size_t smem = smem_bytes(c.shape, s.e_local());
  if (dev.backend == Backend::cuda && dev.smem_optin > 0 && smem > dev.smem_optin)
    return "tile " + tile_str(c.shape) + " needs " + std::to_string(smem) + " bytes of shared memory for " +
           std::to_string(s.e_local()) + " local experts; " + dev.name + " allows " + std::to_string(dev.smem_optin);
  return {};
}

KernelArgs plan_args(const GmmSpec& s, const Config& c, std::int64_t rows) {
  const std::string why = invalid_reason(s, c, DeviceInfo{});
  if (!why.empty()) throw Error("gmm cuda: " + why);
  KernelArgs a = kind_shape_args(s, c, rows, c.shape.bk, "");
  a.group_m = c.group_m;
  a.group_m_div = fast_div_by(a.group_m);
  a.group_tiles_div = fast_div_by(a.group_m * a.n_tiles);
  return a;
}

void bind_tensors(KernelArgs& a, const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out,
                  void* workspace, std::size_t ws_bytes) {
  a.act = need(in, s.act_name()).as<const std::uint16_t>();
  a.weight = need(in, s.weight_name()).as<const std::uint16_t>();
  a.offsets = need(in, "offsets").as<const std::int32_t>();
  a.row_weight = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  a.out = need(out, s.out_name()).as<std::uint16_t>();
  a.fn.bias = s.biased() ? need(in, s.bias_name()).as<const std::uint16_t>() : nullptr;
  // The tile map, the pad-row flags (a biased stage), then split-K's partials.
  const std::size_t map = map_bytes(a.rows, c.shape.bm, a.experts), pads = s.biased() ? pad_rows_bytes(a.rows) : 0;
  const std::size_t need_ws = ws_bytes_for(s, c, a.rows, a.experts);
  if (!workspace || ws_bytes < need_ws)
    throw Error("gmm cuda: the tile map" + std::string(pads ? ", the padding rows' flags" : "") +
                std::string(c.split > 1 ? " and split_k=" + std::to_string(c.split) + "'s partials" : "") + " need " +
                std::to_string(need_ws) + " bytes of workspace for " + std::to_string(a.rows) + " rows, got " +
                std::to_string(ws_bytes));
  a.tile_map = static_cast<std::int32_t*>(workspace);
  if (pads) a.fn.pad_rows = reinterpret_cast<std::uint8_t*>(static_cast<std::byte*>(workspace) + map);
  if (c.split > 1) a.partial = reinterpret_cast<float*>(static_cast<std::byte*>(workspace) + map + pads);
  // What the kernels' accesses assume, checked before anything is launched.
  require_aligned(a.act, 16, "cuda", s.act_name(), "cp.async copies 16 bytes");
  require_aligned(a.weight, 16, "cuda", s.weight_name(), "cp.async copies 16 bytes");
  require_aligned(a.offsets, 4, "cuda", "offsets", "read as int32");
  if (a.row_weight) require_aligned(a.row_weight, 4, "cuda", "row_weight", "read as fp32");
  if (a.fn.bias) require_aligned(a.fn.bias, 2, "cuda", s.bias_name(), "read as 16-bit values");
  require_aligned(a.out, 4, "cuda", s.out_name(), "two 16-bit values are stored as one 32-bit word");
  require_aligned(a.tile_map, 16, "cuda", "the workspace", "the tile map is read 16 bytes at a time");
  if (a.partial) require_aligned(a.partial, 8, "cuda", "the split-K workspace", "partials are float2");
}

std::shared_ptr<const Plan> plan(const GmmSpec& s, const Config& c, std::int64_t rows, int max_ctas) {
  auto p = std::make_shared<Plan>();
  p->spec = s;
  p->config = c;
  KernelArgs& a = p->args;
  a = plan_args(s, c, rows);
  a.max_ctas = max_ctas;
  if (rows == 0) return p;  // nothing to launch
  a.sm_count = cached_sm_count(launch_device());
  p->launches.push_back(plan_schedule(a, c.shape.bm));
  // Which rows are padding, before the kernel whose bias would make them non-zero.
  if (s.biased()) p->launches.push_back(plan_pad_rows(a));
  p->launches.push_back(kernel_of(*find(c.shape), s)(a));
  if (c.split > 1) p->launches.push_back(plan_finalize(a, s.down, s.dtype, !s.plain_expert_fn()));
  for (const PlannedLaunch& l : p->launches) p->kernels += l.grid > 0;
  return p;
}

void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t ws_bytes, void* stream, int max_ctas, const Plan* planned) {
  const TensorRef& act = need(in, s.act_name());
  const std::int64_t R = act.shape.at(0);
  std::shared_ptr<const Plan> own;
  if (!planned || planned->args.rows != R) {
    own = plan(s, c, R, max_ctas);
    planned = own.get();
  }
  if (R == 0) return;
  KernelArgs a = planned->args;
  bind_tensors(a, s, c, in, out, workspace, ws_bytes);
  const bool map = bind_given_tile_map(in, a, c.shape.bm);
  const bool fold = bind_fold(a, s, c, in, out);
  for (const PlannedLaunch& l : planned->launches)
    if (!(map && l.schedule) && !(fold && l.finalize)) launch_planned(l, a, stream);
}

}  // namespace cuda

namespace {

// A run or plan of a problem whose expert function the config's kernel does not compute
// refuses, rather than compute silu(gate)*up on split rows without biases.
void require_expert_fn(const GmmSpec& s, const Params& config) {
  if (std::string why = expert_fn_kernel_invalid(s, config); !why.empty()) throw Error("gmm: " + why);
}

// The cuda backend runs two kernels (`kernel=mma|wgmma`), each reading its own parameters: one
// set away from its default under the other kernel is a mistake worth saying so.
std::string foreign_params(const std::vector<ParamSpec>& specs, const Params& config) {
  const bool wg = wgmma::selected(config);
  for (const auto& name : wg ? wgmma::kMmaOnly : wgmma::kWgmmaOnly)
    for (const auto& spec : specs)
      if (spec.name == name && config.has(name) && !(config.at(name) == spec.default_value))
        return name + " is a kernel=" + (wg ? "mma" : "wgmma") + " parameter: leave it at its default (" +
               value_str(spec.default_value) + ") with kernel=" + (wg ? "wgmma" : "mma");
  return {};
}

}  // namespace

std::string expert_fn_kernel_invalid(const GmmSpec& s, const Params& config) {
  if (s.plain_expert_fn() || (cublas::kind_of(config) == cublas::Kind::none && !wgmma::selected(config))) return {};
  return "kernel=" + config.s("kernel") + " computes silu(gate)*up on split w13 without expert biases, not " +
         s.expert_fn_str() + ": use kernel=mma (which computes it) or --backend cpu for this problem";
}

// 4-bit weights run on the 4-bit decode kernel (kernel=mma) alone: the library peers and the
// wgmma path read dense operands.
std::string w4_kernel_invalid(const GmmSpec& s, const Params& config) {
  if (cublas::kind_of(config) == cublas::Kind::none && !wgmma::selected(config)) return {};
  return std::string("dtype ") + (s.wq == WeightFormat::mxfp4 ? "mxfp4" : "int4") +
         " runs on kernel=mma (the 4-bit decode kernel) only: kernel=" + config.s("kernel") + " reads dense weights";
}

void require_w4_kernel(const GmmSpec& s, const Params& config) {
  if (std::string why = w4_kernel_invalid(s, config); !why.empty()) throw Error("gmm: " + why);
}

}  // namespace moe::gmm

namespace moe {

int gmm_tile_map_block_m(const Params& config) {
  if (gmm::cublas::kind_of(config) != gmm::cublas::Kind::none || gmm::wgmma::selected(config)) return 0;
  return gmm::cuda::parse_config(config).shape.bm;
}

std::size_t gmm_tile_map_bytes(std::int64_t rows, int block_m, std::int64_t experts) {
  return gmm::cuda::map_bytes(rows, block_m, experts);
}

}  // namespace moe

namespace moe::gmm {

BackendImpl cuda_backend() {
  BackendImpl b;
  b.backend = Backend::cuda;
  b.config_params = {
      int_param("block_m", 64, 16, 128, "rows per CTA tile (16,32,64,128)"),
      int_param("block_n", 128, 32, 256, "weight rows per CTA tile (32,64,128,256); up: half gate, half up"),
      int_param("block_k", 64, 32, 128, "K slice per pipeline stage (32,64; fp8: 128, one scale block)"),
      int_param("warps_m", 2, 1, 4, "warps along M"),
      int_param("warps_n", 2, 1, 8, "warps along N (fp8 block_n=256: 8)"),
      int_param("stages", 3, 2, 4, "cp.async pipeline depth"),
      int_param("split_k", 1, 1, 8, "K split over CTAs, fp32 partials summed in order (1,2,3,4,6,8)"),
      int_param("group_m", 1, 1, 8, "tile order: M-tiles walked per N-tile (1,4,8); >1 reuses weight tiles in L2"),
  };
  for (auto& p : wgmma::config_params()) b.config_params.push_back(p);
  cublas::add_config_params(b.config_params);
  // kernel=cublas|cublaslt run NVIDIA's libraries (gmm/cublas/): peers, measured beside ours.
  b.peer = [](const Params& config) { return cublas::peer(config); };
  b.invalid_reason = [specs = b.config_params](const Params& problem, const Params& config, const DeviceInfo& dev) {
    std::string why = cublas::foreign_params(specs, config);
    if (!why.empty()) return why;
    const GmmSpec s = GmmSpec::parse(problem);
    if (s.w4()) {
      if (why = w4_kernel_invalid(s, config); !why.empty()) return why;
      if (why = foreign_params(specs, config); !why.empty()) return why;
      return w4_mma::invalid_reason(s, cuda::parse_config(config), dev);
    }
    if (why = expert_fn_kernel_invalid(s, config); !why.empty()) return why;
    if (cublas::kind_of(config) != cublas::Kind::none)
      return cublas::invalid_reason(s, cublas::parse_config(config), dev);
    why = foreign_params(specs, config);
    if (!why.empty()) return why;
    if (wgmma::selected(config)) return wgmma::invalid_reason(s, wgmma::parse_config(config), dev);
    return cuda::invalid_reason(s, cuda::parse_config(config), dev);
  };
  b.space = [specs = b.config_params](const Params& problem, const DeviceInfo& dev, bool full) {
    const GmmSpec s = GmmSpec::parse(problem);
    const double rows = s.avg_rows_per_expert();
    std::vector<Params> v;
    auto add = [&](const Params& p) { v.push_back(complete(specs, p, "gmm cuda config")); };
    if (s.w4()) {
      for (auto& c : w4_mma::space(s, dev, full)) add(cuda::config_params(c));
      return v;
    }
    for (auto& e : cuda::tiles())
      for (int split : cuda::kSplits)
        for (int group_m : cuda::kGroupM) {
          const cuda::Config c{e.shape, split, group_m};
          if (!cuda::invalid_reason(s, c, dev).empty()) continue;
          // Grouping only matters where an expert has several M-tiles.
          if (group_m > 1 && rows < 2.0 * e.shape.bm) continue;
          if (!full) {
            // Curated: tiles no taller than twice the typical segment (16 always), no tiny tiles
            // for prefill, split-K only where few rows leave the SMs short of work, one group size.
            if (e.shape.bm > 16 && e.shape.bm > 2 * rows) continue;
            if (rows >= 512 && e.shape.bm < 64) continue;
            if (split > 1 && (rows > 64 || split == 3 || split == 6)) continue;
            if (group_m == 4) continue;
          }
          add(cuda::config_params(c));
        }
    if (s.fp8)
      for (auto& c : fp8_mma::space(s, dev, full)) add(cuda::config_params(c));
    // The Hopper grouped GEMM and the libraries compute the plain expert function alone.
    if (!s.plain_expert_fn()) return v;
    // The Hopper grouped GEMM: its tiles are 32 (swapped operands), 64 or 128 rows tall, so the
    // curated space offers each where experts have about a tile of rows.
    for (auto& e : wgmma::entries()) {
      const wgmma::Config c{e.shape};
      if (!wgmma::invalid_reason(s, c, dev).empty()) continue;
      if (!full && rows < 0.5 * e.shape.bm) continue;
      // The swapped-operand tile serves experts of one to four of its tiles of rows (below, the
      // mma kernel; above, the 64- and 128-row tiles). rows counts alignment padding.
      if (!full && e.shape.swapped() && (rows < e.shape.bm || rows > 4.0 * e.shape.bm)) continue;
      add(wgmma::config_params(c));
    }
    for (auto& c : cublas::space(s, dev, full)) add(cublas::config_params(c));
    return v;
  };
  b.default_config = [specs = b.config_params](const Params& problem, const DeviceInfo& dev) {
    const GmmSpec s = GmmSpec::parse(problem);
    const double rows = s.avg_rows_per_expert();
    if (s.w4()) return complete(specs, cuda::config_params(w4_mma::default_config(s, dev)), "gmm cuda config");
    if (s.fp8) {
      // Prefill: the blockwise-scaled grouped GEMM's first tile that fits; decode: the mma kernel.
      if (rows > 64)
        for (auto& e : wgmma::entries())
          if (wgmma::invalid_reason(s, wgmma::Config{e.shape}, dev).empty())
            return complete(specs, wgmma::config_params(wgmma::Config{e.shape}), "gmm cuda config");
      return complete(specs, cuda::config_params(fp8_mma::default_config(s, dev)), "gmm cuda config");
    }
    const cuda::TileShape pick = rows <= 16   ? cuda::TileShape{16, 64, 64, 1, 4, 4}
                                 : rows <= 32  ? cuda::TileShape{32, 128, 64, 1, 4, 4}
                                 : rows <= 128 ? cuda::TileShape{64, 128, 64, 2, 2, 3}
                                               : cuda::TileShape{128, 128, 64, 2, 2, 3};
    cuda::Config c{pick, 1};
    if (!cuda::invalid_reason(s, c, dev).empty())
      for (auto& e : cuda::tiles())  // a device with less shared memory: the first shape that fits
        if (cuda::invalid_reason(s, cuda::Config{e.shape, 1}, dev).empty()) {
          c.shape = e.shape;
          break;
        }
    return complete(specs, cuda::config_params(c), "gmm cuda config");
  };
  b.workspace_bytes = [](const Params& problem, const Params& config) {
    if (cublas::kind_of(config) != cublas::Kind::none)
      return cublas::layout(GmmSpec::parse(problem), cublas::parse_config(config)).total;
    if (wgmma::selected(config)) return wgmma::workspace_bytes(GmmSpec::parse(problem), wgmma::parse_config(config));
    const GmmSpec s = GmmSpec::parse(problem);
    if (s.w4()) return w4_mma::workspace_bytes(s, cuda::parse_config(config));
    if (s.fp8) return fp8_mma::workspace_bytes(s, cuda::parse_config(config));
    return cuda::workspace_bytes(s, cuda::parse_config(config));
  };
  b.run = [](const Params& problem, const Params& config, const RefMap& in, const RefMap& out,
             const LaunchContext& ctx) {
    // A planned call (the bench's, moe::Kernel's, the layer's stages) takes the problem and
    // config its plan was made for; only an unplanned one parses them.
    if (const auto* lib = dynamic_cast<const cublas::Plan*>(ctx.plan))
      return cublas::run(lib->spec, lib->config, in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream, lib);
    if (const auto* slot = dynamic_cast<const wgmma::LaunchSlot*>(ctx.plan))
      return wgmma::run(slot->spec, slot->config, in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream, slot);
    if (const auto* planned = dynamic_cast<const cuda::Plan*>(ctx.plan))
      return cuda::run(planned->spec, planned->config, in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream, 0,
                       planned);
    if (const auto* planned = dynamic_cast<const fp8_mma::Plan*>(ctx.plan))
      return fp8_mma::run(planned->spec, planned->config, in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream,
                          planned);
    if (const auto* planned = dynamic_cast<const w4_mma::Plan*>(ctx.plan))
      return w4_mma::run(planned->spec, planned->config, in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream,
                         planned);
    // Plans are made only for problems the kernels compute (b.plan refuses the others).
    const GmmSpec s = GmmSpec::parse(problem);
    if (s.w4()) {
      require_w4_kernel(s, config);
      return w4_mma::run(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream);
    }
    require_expert_fn(s, config);
    if (cublas::kind_of(config) != cublas::Kind::none)
      return cublas::run(s, cublas::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream);
    if (wgmma::selected(config))
      return wgmma::run(s, wgmma::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream);
    if (s.fp8)
      return fp8_mma::run(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream);
    cuda::run(s, cuda::parse_config(config), in, out, ctx.workspace, ctx.workspace_bytes, ctx.stream, 0);
  };
  b.plan = [](const Params& problem, const Params& config, const RefMap& in) -> std::shared_ptr<const LaunchPlan> {
    const GmmSpec s = GmmSpec::parse(problem);
    if (s.w4()) {
      require_w4_kernel(s, config);
      return w4_mma::plan(s, cuda::parse_config(config), need(in, s.act_name()).shape.at(0));
    }
    require_expert_fn(s, config);
    if (cublas::kind_of(config) != cublas::Kind::none)
      return cublas::plan(s, cublas::parse_config(config), need(in, s.act_name()).shape.at(0));
    if (wgmma::selected(config))
      return wgmma::launch_slot(s, wgmma::parse_config(config), need(in, s.act_name()).shape.at(0));
    if (s.fp8) return fp8_mma::plan(s, cuda::parse_config(config), need(in, s.act_name()).shape.at(0));
    return cuda::plan(s, cuda::parse_config(config), need(in, s.act_name()).shape.at(0));
  };
  return b;
}

}  // namespace moe::gmm
