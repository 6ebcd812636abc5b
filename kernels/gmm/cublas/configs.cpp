#include "gmm/cublas/configs.hpp"

#include <algorithm>

#include "moe/error.hpp"

namespace moe::gmm::cublas {

namespace {

constexpr std::size_t kAlign = 256;
std::size_t up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The parameters only moebench's own kernels read: a library config leaves them at their defaults.
const char* const kOursOnly[] = {"block_m", "block_n", "block_k", "warps_m", "warps_n", "stages",
                                 "split_k", "group_m", "cluster_m", "cluster_n", "schedule"};

}  // namespace

Kind kind_of(const Params& config) {
  if (!config.has("kernel")) return Kind::none;
  const std::string& k = config.s("kernel");
  return k == "cublas" ? Kind::cublas : k == "cublaslt" ? Kind::cublaslt : Kind::none;
}

std::string peer(const Params& config) {
  switch (kind_of(config)) {
    case Kind::cublas: return "cuBLAS";
    case Kind::cublaslt: return "cuBLASLt";
    case Kind::none: break;
  }
  return {};
}

void add_config_params(std::vector<ParamSpec>& specs) {
  for (ParamSpec& p : specs)
    if (p.name == "kernel") {
      p.choices.push_back("cublas");
      p.choices.push_back("cublaslt");
      p.help += "; cublas: NVIDIA cuBLAS's grouped GEMM (bf16/f16), cublaslt: cuBLASLt's 1x128/128x128 block-scaled "
                "fp8 matmul per expert (sm_90), each with moebench's epilogue: peers, their row counts read on the host";
    }
  specs.push_back(choice_param("lt_out", "f32", {"f32", "bf16"},
                               "kernel=cublaslt, stage=down: cuBLASLt writes fp32 rows that the epilogue scales and rounds "
                               "once (f32), or bf16 y_sorted directly, scaled in place when routed (bf16)"));
}

Config parse_config(const Params& c) {
  Config r;
  r.kind = kind_of(c) == Kind::cublaslt ? Kind::cublaslt : Kind::cublas;
  r.lt_f32 = !c.has("lt_out") || c.s("lt_out") == "f32";
  return r;
}

Params config_params(const Config& c) {
  return Params{{"kernel", std::string(c.kind == Kind::cublaslt ? "cublaslt" : "cublas")},
                {"lt_out", std::string(c.lt_f32 ? "f32" : "bf16")}};
}

std::string foreign_params(const std::vector<ParamSpec>& specs, const Params& config) {
  const Kind k = kind_of(config);
  for (const ParamSpec& spec : specs) {
    if (!config.has(spec.name) || config.at(spec.name) == spec.default_value) continue;
    if (k != Kind::none && std::find(std::begin(kOursOnly), std::end(kOursOnly), spec.name) != std::end(kOursOnly))
      return spec.name + " is a parameter of moebench's own kernels (mma, wgmma): leave it at its default (" +
             value_str(spec.default_value) + ") with kernel=" + config.s("kernel");
    if (k != Kind::cublaslt && spec.name == "lt_out")
      return "lt_out is a kernel=cublaslt parameter: leave it at its default (" + value_str(spec.default_value) +
             ") with kernel=" + (config.has("kernel") ? config.s("kernel") : std::string("mma"));
  }
  return {};
}

std::string invalid_reason(const GmmSpec& s, const Config& c, const DeviceInfo& dev) {
  const bool cuda = dev.backend == Backend::cuda && dev.cc_major != 0;
  const std::string sm = std::to_string(dev.cc_major) + std::to_string(dev.cc_minor);
  if (c.kind == Kind::cublas) {
    if (s.fp8)
      return "kernel=cublas is cuBLAS's bf16/f16 grouped GEMM; dtype=fp8 runs cuBLASLt's block-scaled matmul: use "
             "kernel=cublaslt";
    if (s.hidden % 8 != 0 || s.intermediate % 8 != 0)
      return "kernel=cublas's epilogue (silu*up, the routed weight) reads 16-byte rows: hidden (" +
             std::to_string(s.hidden) + ") and intermediate (" + std::to_string(s.intermediate) +
             ") must be multiples of 8; use --backend cpu for this shape";
    if (cuda && dev.cc_major < 8)
      return "kernel=cublas computes bf16/f16 on tensor cores from sm_80 on; " + dev.name + " is sm_" + sm;
    if (!c.lt_f32) return "lt_out is a kernel=cublaslt parameter: leave it at its default (f32) with kernel=cublas";
    return {};
  }
  if (!s.fp8)
    return "kernel=cublaslt is cuBLASLt's block-scaled fp8 matmul; for dtype=" + std::string(dtype_name(s.dtype)) +
           " use kernel=cublas (cuBLAS's grouped GEMM)";
  // Activation scales 1x128 (fp32, or ue8m0's powers of two held in fp32: the same values) map to
  // CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, weight scales per 128x128 block to BLK128x128_32F.
  // moebench keeps no other scale format; one added without a cuBLASLt mode is refused here.
  if (cuda && !(dev.cc_major == 9 && dev.cc_minor == 0))
    return "cuBLASLt's 1x128 and 128x128 block-scaled fp8 modes (VEC128_32F, BLK128x128_32F) run on Hopper (sm_90); " +
           dev.name + " is sm_" + sm + ": use kernel=mma";
  if (!s.down && !c.lt_f32)
    return "kernel=cublaslt up writes fp32 gate|up for the silu*up+requantization pass (h_scale is taken from the "
           "unrounded sums): leave lt_out=f32";
  return {};
}

std::vector<Config> space(const GmmSpec& s, const DeviceInfo& dev, bool full) {
  std::vector<Config> v;
  for (const Kind k : {Kind::cublas, Kind::cublaslt})
    for (const bool f32 : {true, false}) {
      const Config c{k, f32};
      if (!invalid_reason(s, c, dev).empty()) continue;
      // Curated: one config per library. Down writes bf16 directly unless each row is scaled by its
      // routed weight, where fp32 rows keep the one rounding.
      if (!full && k == Kind::cublaslt && s.down && f32 != s.routed_weight) continue;
      v.push_back(c);
    }
  return v;
}

Layout layout(const GmmSpec& s, const Config& c) {
  const auto E = static_cast<std::size_t>(s.e_local());
  const auto R = static_cast<std::size_t>(s.max_rows());
  const auto NW = static_cast<std::size_t>(s.n_w());
  Layout l;
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t here = at;
    at += up(bytes);
    return here;
  };
  if (c.kind == Kind::cublas) {
    l.pointers = take(3 * E * sizeof(void*));
    l.gate_up = take(s.down ? 0 : R * NW * s.elem_bytes());
  } else {
    const auto KB = static_cast<std::size_t>(s.k_groups());
    l.act_scales = take((R * KB + 4 * E + 4) * sizeof(float));
    l.w_scales = take(weight_scales_repacked(s)
                          ? E * (NW / 128) * static_cast<std::size_t>(padded_k_groups(s)) * sizeof(float)
                          : 0);
    l.gate_up = take(!s.down || c.lt_f32 ? R * NW * sizeof(float) : 0);
    l.lt = take(kLtWorkspaceBytes);
    l.lt_bytes = kLtWorkspaceBytes;
  }
  l.total = at;
  return l;
}

void check_host_offsets(const std::int32_t* offsets, std::int64_t experts, std::int64_t rows) {
  for (std::int64_t e = 0; e <= experts; ++e) {
    const std::int64_t v = offsets[e], before = e == 0 ? 0 : offsets[e - 1];
    if (v < before || v > rows || (e == 0 && v != 0))
      throw Error("gmm cuda: offsets[" + std::to_string(e) + "] = " + std::to_string(v) +
                  (e == 0 && v != 0 ? " (must be 0)"
                   : v > rows       ? " is past the " + std::to_string(rows) + " rows of the activations"
                                    : " is below offsets[" + std::to_string(e - 1) + "] = " + std::to_string(before)) +
                  ": a library kernel reads them on the host and will not run on them; pass dispatch's offsets");
  }
}

std::vector<Group> groups(const std::int32_t* offsets, std::int64_t experts) {
  std::vector<Group> v;
  for (std::int64_t e = 0; e < experts; ++e)
    if (offsets[e + 1] > offsets[e]) v.push_back({static_cast<int>(e), offsets[e], offsets[e + 1] - offsets[e]});
  return v;
}

GroupedArgs grouped_args(const GmmSpec& s, const std::vector<Group>& gs, std::uintptr_t act, std::uintptr_t weight,
                         std::uintptr_t out, std::size_t in_bytes, std::size_t out_bytes) {
  GroupedArgs g;
  const auto K = static_cast<std::uintptr_t>(s.k_dim()), NW = static_cast<std::uintptr_t>(s.n_w());
  for (const Group& grp : gs) {
    g.m.push_back(static_cast<int>(NW));
    g.n.push_back(static_cast<int>(grp.rows));
    g.k.push_back(static_cast<int>(K));
    g.lda.push_back(static_cast<int>(K));
    g.ldb.push_back(static_cast<int>(K));
    g.ldc.push_back(static_cast<int>(NW));
    g.a.push_back(weight + static_cast<std::uintptr_t>(grp.expert) * NW * K * in_bytes);
    g.b.push_back(act + static_cast<std::uintptr_t>(grp.begin) * K * in_bytes);
    g.c.push_back(out + static_cast<std::uintptr_t>(grp.begin) * NW * out_bytes);
  }
  return g;
}

}  // namespace moe::gmm::cublas
