// The host side of the wgmma path: which shapes are built, when a config cannot run, how the
// workspace is carved, and plans made once per (problem, config, workspace) so that a call
// only launches: setup kernel, grouped GEMM, and for up the silu*up kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "common/bounded_cache.hpp"
#include "gmm/alignment.hpp"
#include "gmm/detail.hpp"
#include "gmm/wgmma/wgmma_configs.hpp"
#include "moe/cuda_device.hpp"
#include "moe/error.hpp"

namespace moe::gmm::wgmma {

std::string shape_str(const TileShape& s) {
  return std::to_string(s.bm) + "x" + std::to_string(s.bn) + "x" + std::to_string(s.bk) +
         (s.pingpong ? " pingpong" : " cooperative") + " cluster " + std::to_string(s.cluster_m) + "x" +
         std::to_string(s.cluster_n) + (s.swapped() ? " swapped" : "");
}

std::vector<ParamSpec> config_params() {
  return {choice_param("kernel", "mma", {"mma", "wgmma"},
                       "mma: hand-written mma.sync kernel (fused silu*up; any sm_80+); wgmma: CUTLASS wgmma+TMA "
                       "grouped GEMM (sm_90 only; block_m/n/k, cluster_m, cluster_n, schedule)"),
          int_param("cluster_m", 1, 1, 2, "kernel=wgmma: CTAs per cluster along M, sharing weight tiles (1,2)"),
          int_param("cluster_n", 1, 1, 2, "kernel=wgmma: CTAs per cluster along N, sharing activation tiles (1,2)"),
          choice_param("schedule", "cooperative", {"cooperative", "pingpong"},
                       "kernel=wgmma: consumer warpgroups share a tile (cooperative) or alternate tiles (pingpong)")};
}

bool selected(const Params& config) { return config.has("kernel") && config.s("kernel") == "wgmma"; }

Config parse_config(const Params& c) {
  Config r;
  r.shape.bm = static_cast<int>(c.i("block_m"));
  r.shape.bn = static_cast<int>(c.i("block_n"));
  r.shape.bk = static_cast<int>(c.i("block_k"));
  r.shape.cluster_m = c.has("cluster_m") ? static_cast<int>(c.i("cluster_m")) : 1;
  r.shape.cluster_n = c.has("cluster_n") ? static_cast<int>(c.i("cluster_n")) : 1;
  r.shape.pingpong = c.has("schedule") && c.s("schedule") == "pingpong";
  return r;
}

Params config_params(const Config& c) {
  return Params{{"kernel", std::string("wgmma")},
                {"block_m", std::int64_t{c.shape.bm}},
                {"block_n", std::int64_t{c.shape.bn}},
                {"block_k", std::int64_t{c.shape.bk}},
                {"cluster_m", std::int64_t{c.shape.cluster_m}},
                {"cluster_n", std::int64_t{c.shape.cluster_n}},
                {"schedule", std::string(c.shape.pingpong ? "pingpong" : "cooperative")}};
}

namespace {

Entry with_down(Entry e, const Variant& down) {
  if (!(down.shape == e.shape)) throw Error("gmm wgmma: an fp8 down instantiation of another shape (a bug)");
  e.fp8_down = down;
  return e;
}

}  // namespace

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      entry_128x128x64_coop(),
      entry_128x256x64_coop(),
      entry_64x128x64_pingpong(),
      entry_64x256x64_pingpong(),
      entry_128x128x64_coop_c2x1(),
      entry_128x256x64_coop_c1x2(),
      entry_32x128x128_coop_swapped(),
      with_down(entry_fp8_128x128x128_coop_c2x1(), fp8_down_128x128x128_coop_c2x1()),
      with_down(entry_fp8_64x128x128_pingpong(), fp8_down_64x128x128_pingpong()),
      with_down(entry_fp8_128x128x128_coop_c1x2(), fp8_down_128x128x128_coop_c1x2()),
      with_down(entry_fp8_32x128x128_pingpong_c1x2_swapped(), fp8_down_32x128x128_pingpong_c1x2_swapped())};
  return all;
}

namespace {

// CUTLASS keeps a few TMA descriptors per SM in its workspace: size it for any Hopper part.
constexpr int kMaxSms = 256;
constexpr std::size_t kAlign = 256;

std::size_t up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

const Entry* find(const TileShape& t) {
  for (auto& e : entries())
    if (e.shape == t) return &e;
  return nullptr;
}

std::string built_for(DType t) {
  std::string r;
  for (auto& e : entries())
    if (e.get(t, false)) r += (r.empty() ? "" : "; ") + shape_str(e.shape);
  return r;
}

// Where each part of the workspace starts (offsets in bytes from its base).
struct Layout {
  std::size_t problems, a, b, d, row_weight, lda, ldb, ldd, sfa, sfb, layout_sfa, layout_sfb, gu, cutlass, total;
  bool fp8;
};

Layout layout(const GmmSpec& s, const Entry& e, std::int64_t rows, int sm_count) {
  const auto E = static_cast<std::size_t>(s.e_local());
  Layout l{};
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t here = at;
    at += up(bytes);
    return here;
  };
  l.problems = take(E * 3 * sizeof(int));
  l.a = take(E * sizeof(void*));
  l.b = take(E * sizeof(void*));
  l.d = take(E * sizeof(void*));
  l.row_weight = take(E * sizeof(void*));
  l.lda = take(E * sizeof(long long));
  l.ldb = take(E * sizeof(long long));
  l.ldd = take(E * sizeof(long long));
  l.fp8 = s.fp8;
  const std::size_t fp8_experts = s.fp8 ? E : 0;
  l.sfa = take(fp8_experts * sizeof(void*));
  l.sfb = take(fp8_experts * sizeof(void*));
  l.layout_sfa = take(fp8_experts * kScaleLayoutInts * sizeof(int));
  l.layout_sfb = take(fp8_experts * kScaleLayoutInts * sizeof(int));
  // up: the GEMM's gate|up rows (fp32 for fp8), which the silu*up kernel turns into h. Down
  // writes y_sorted itself.
  const std::size_t out_bytes = s.fp8 ? sizeof(float) : s.elem_bytes();
  l.gu = take(s.down ? 0 : static_cast<std::size_t>(rows) * static_cast<std::size_t>(s.n_w()) * out_bytes);
  l.cutlass = take(e.workspace_for(s.dtype, s.down)(static_cast<int>(E), sm_count));
  l.total = at;
  return l;
}

template <class T>
T at(void* base, std::size_t off) {
  return reinterpret_cast<T>(static_cast<unsigned char*>(base) + off);
}

GroupArrays arrays(void* ws, const Layout& l) {
  GroupArrays g;
  g.problems = at<int*>(ws, l.problems);
  g.a = at<const void**>(ws, l.a);
  g.b = at<const void**>(ws, l.b);
  g.d = at<void**>(ws, l.d);
  g.row_weight = at<const float**>(ws, l.row_weight);
  g.lda = at<long long*>(ws, l.lda);
  g.ldb = at<long long*>(ws, l.ldb);
  g.ldd = at<long long*>(ws, l.ldd);
  if (l.fp8) {
    g.sfa = at<const float**>(ws, l.sfa);
    g.sfb = at<const float**>(ws, l.sfb);
    g.layout_sfa = at<int*>(ws, l.layout_sfa);
    g.layout_sfb = at<int*>(ws, l.layout_sfb);
  }
  return g;
}

// What a plan depends on: CUTLASS's params hold the workspace's addresses and the shapes
// that are not per expert; everything per call goes through the arrays the setup kernel fills.
using PlanKey = std::tuple<int, int, int, int, int, bool, int, bool, bool, std::int64_t, std::int64_t, std::int64_t,
                           std::int64_t, const void*, std::size_t, int>;

}  // namespace

struct ResolvedPlan {
  std::unique_ptr<Planned> gemm;
  Layout layout;
};

namespace {

std::mutex plans_mutex;
BoundedCache<PlanKey, ResolvedPlan>& plans() {
  static BoundedCache<PlanKey, ResolvedPlan> m(kMaxPlans);
  return m;
}

void check_aligned(const void* p, const std::string& name) {
  require_aligned(p, 16, "wgmma", name, "TMA reads whole 16-byte rows", ", or use kernel=mma");
}

// CUTLASS keeps its CUtensorMap copies in the workspace, and a tensor map must sit on 128 bytes.
constexpr std::size_t kWorkspaceAlign = 128;

}  // namespace

std::size_t workspace_bytes(const GmmSpec& s, const Config& c, int sm_count) {
  const Entry* e = find(c.shape);
  if (!e) return 0;
  return layout(s, *e, s.max_rows(), sm_count > 0 ? sm_count : kMaxSms).total;
}

std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev) {
  if (s.hidden % 8 != 0 || s.intermediate % 8 != 0)
    return "kernel=wgmma reads rows with TMA (16-byte aligned rows): hidden (" + std::to_string(s.hidden) +
           ") and intermediate (" + std::to_string(s.intermediate) + ") must be multiples of 8";
  const Entry* e = find(c.shape);
  if (!e || !e->get(s.dtype, s.down))
    return "no " + std::string(dtype_name(s.dtype)) + " wgmma kernel is built with tile " + shape_str(c.shape) +
           "; built: " + built_for(s.dtype);
  if (dev.backend == Backend::cuda && dev.cc_major != 0 && !(dev.cc_major == 9 && dev.cc_minor == 0))
    return "kernel=wgmma needs an sm_90 (Hopper) device; " + dev.name + " is sm_" + std::to_string(dev.cc_major) +
           std::to_string(dev.cc_minor) + ": use kernel=mma";
  if (dev.backend == Backend::cuda && dev.smem_optin > 0 && e->smem_for(s.dtype, s.down) > dev.smem_optin)
    return "wgmma tile " + shape_str(c.shape) + " needs " + std::to_string(e->smem_for(s.dtype, s.down)) +
           " bytes of shared memory; " +
           dev.name + " allows " + std::to_string(dev.smem_optin);
  if (dev.backend == Backend::cuda && dev.sm_count > kMaxSms)
    return "kernel=wgmma sizes its workspace for at most " + std::to_string(kMaxSms) + " SMs; " + dev.name + " has " +
           std::to_string(dev.sm_count);
  return {};
}

// Once per config and workspace: the device's facts, the layout, CUTLASS's checks, params and
// shared-memory attribute. Later calls find the plan here (or in their launch slot).
static std::shared_ptr<const ResolvedPlan> resolve(const GmmSpec& s, const Config& c, void* workspace, std::size_t ws_bytes) {
  const std::string why = invalid_reason(s, c, DeviceInfo{});
  if (!why.empty()) throw Error("gmm cuda: " + why);
  const Entry& e = *find(c.shape);
  // Before asking the device anything: a misaligned workspace is the caller's mistake on any device.
  require_aligned(workspace, kWorkspaceAlign, "wgmma", "the workspace", "CUTLASS keeps 128-byte tensor maps in it");
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  const PlanKey key{c.shape.bm,  c.shape.bn, c.shape.bk,  c.shape.cluster_m, c.shape.cluster_n,
                    c.shape.pingpong, static_cast<int>(s.dtype), s.down, s.routed_weight, s.e_local(),
                    s.n_w(),     s.k_dim(),  s.max_rows(), workspace, ws_bytes,       device};
  {
    std::lock_guard<std::mutex> lock(plans_mutex);
    // Dropped plans stay alive in the launch slots that hold them.
    return plans().get(key, [&] {
      int cc_major = 0, cc_minor = 0, sms = 0;
      cuda_check(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
      cuda_check(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
      cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
      if (cc_major != 9 || cc_minor != 0)
        throw Error("gmm cuda: kernel=wgmma needs an sm_90 (Hopper) device, this one is sm_" +
                    std::to_string(cc_major) + std::to_string(cc_minor) + ": use kernel=mma");
      if (sms > kMaxSms) throw Error("gmm cuda: kernel=wgmma supports at most " + std::to_string(kMaxSms) + " SMs");
      // The workspace is sized for the most rows the problem can have (workspace_bytes).
      auto made = std::make_shared<ResolvedPlan>();
      ResolvedPlan& p = *made;
      p.layout = layout(s, e, s.max_rows(), kMaxSms);
      if (!workspace || ws_bytes < p.layout.total)
        throw Error("gmm cuda: kernel=wgmma needs " + std::to_string(p.layout.total) + " bytes of workspace, got " +
                    std::to_string(ws_bytes));
      PlanArgs pa;
      pa.experts = static_cast<int>(s.e_local());
      pa.n = static_cast<int>(s.n_w());
      pa.k = static_cast<int>(s.k_dim());
      pa.g = arrays(workspace, p.layout);
      pa.row_weight = s.routed_weight;
      pa.workspace = at<void*>(workspace, p.layout.cutlass);
      pa.sm_count = sms;
      pa.device = device;
      p.gemm = e.get(s.dtype, s.down)(pa);
      return std::shared_ptr<const ResolvedPlan>(std::move(made));
    });
  }
}

std::size_t cached_plans() {
  std::lock_guard<std::mutex> lock(plans_mutex);
  return plans().size();
}

// fp8 up after the GEMM: silu(gate)*up requantized into h + h_scale.
static void finish_fp8_up(const GmmSpec& s, const SetupArgs& sa, const RefMap& out, void* stream) {
  SiluQuantLaunch q;
  q.gu = reinterpret_cast<const float*>(sa.out);
  q.offsets = sa.offsets;
  q.h = need(out, "h").as<std::uint8_t>();
  q.h_scale = need(out, "h_scale").as<float>();
  check_aligned(q.h, "h");
  q.rows = sa.rows;
  q.inter = static_cast<int>(s.intermediate);
  q.experts = sa.experts;
  q.ue8m0 = s.ue8m0;
  launch_silu_quant(q, stream);
}

std::shared_ptr<const LaunchSlot> launch_slot(const GmmSpec& s, const Config& c, std::int64_t rows) {
  auto slot = std::make_shared<LaunchSlot>();
  slot->spec = s;
  slot->config = c;
  // setup, GEMM (, silu*up); a call with no rows or no local expert launches nothing.
  slot->kernels = rows == 0 || s.e_local() == 0 ? 0 : s.down ? 2 : 3;
  return slot;
}

void run(const GmmSpec& s, const Config& c, const RefMap& in, const RefMap& out, void* workspace,
         std::size_t ws_bytes, void* stream, const LaunchSlot* slot) {
  const TensorRef& act = need(in, s.act_name());
  const std::int64_t R = act.shape.at(0);
  if (R == 0 || s.e_local() == 0) return;
  // A planned call reads its plan through the slot: no lookup, no reference-count traffic.
  std::shared_ptr<const ResolvedPlan> own;
  const ResolvedPlan* plan = slot && slot->workspace == workspace ? slot->resolved.get() : nullptr;
  if (!plan) {
    own = resolve(s, c, workspace, ws_bytes);
    plan = own.get();
    if (slot) slot->resolved = own, slot->workspace = workspace;
  }
  if (R > s.max_rows())
    throw Error("gmm cuda: " + std::to_string(R) + " rows are more than the " + std::to_string(s.max_rows()) +
                " the problem's tokens can route (the workspace is sized for those): raise --tokens");

  SetupArgs sa;
  sa.act = act.as<const std::uint16_t>();
  sa.weight = need(in, s.weight_name()).as<const std::uint16_t>();
  sa.offsets = need(in, "offsets").as<const std::int32_t>();
  sa.row_weight = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  std::uint16_t* dst = need(out, s.out_name()).as<std::uint16_t>();
  sa.out = s.down ? dst : at<std::uint16_t*>(workspace, plan->layout.gu);
  sa.rows = static_cast<int>(R);
  sa.n = static_cast<int>(s.n_w());
  sa.k = static_cast<int>(s.k_dim());
  sa.experts = static_cast<int>(s.e_local());
  sa.swap = c.shape.swapped();
  sa.g = arrays(workspace, plan->layout);
  if (s.fp8) {
    sa.in_bytes = 1;
    sa.out_bytes = s.down ? 2 : sizeof(float);
    sa.act_scale = need(in, s.act_scale_name()).as<const float>();
    sa.weight_scale = need(in, s.weight_scale_name()).as<const float>();
  }
  check_aligned(sa.act, s.act_name());
  check_aligned(sa.weight, s.weight_name());
  check_aligned(dst, s.out_name());

  launch_setup(sa, stream);
  plan->gemm->launch(stream);
  if (s.down) return;
  if (s.fp8) return finish_fp8_up(s, sa, out, stream);
  SiluArgs si;
  si.gu = sa.out;
  si.offsets = sa.offsets;
  si.h = dst;
  si.rows = sa.rows;
  si.inter = static_cast<int>(s.intermediate);
  si.experts = sa.experts;
  launch_silu(si, s.dtype == DType::bf16, stream);
}

}  // namespace moe::gmm::wgmma
