#include <algorithm>
#include <cmath>
#include <cstdint>

#include "moe/error.hpp"
#include "router/cuda.hpp"
#include "router/cuda_shapes.hpp"

namespace moe::router {

namespace {

int esize_of(const RouterSpec& s) { return static_cast<int>(dtype_size(s.dtype)); }

bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

std::string compiled_list(int esize) {
  std::string r;
  for (const auto& s : kShapes)
    if (s.esize == esize)
      r += (r.empty() ? "" : " ") + std::to_string(s.lanes) + "/" + std::to_string(s.epl) + "/" +
           std::to_string(s.vec * s.esize);
  return r;
}

// Whether the chunks of a lane sit inside single groups (the fast group path).
bool lane_groups_fit(const RouterSpec& sp, int lanes, int vec) {
  const std::int64_t gs = sp.group_size();
  return gs % vec == 0 && (std::int64_t{lanes} * vec) % gs == 0;
}

}  // namespace

CudaConfig CudaConfig::from(const Params& c) {
  CudaConfig r;
  r.lanes = static_cast<int>(c.i("lanes"));
  r.epl = static_cast<int>(c.i("epl"));
  r.vec_bytes = static_cast<int>(c.i("vec_bytes"));
  r.warps = static_cast<int>(c.i("warps"));
  return r;
}

Params CudaConfig::params() const {
  return Params{{"lanes", std::int64_t{lanes}},
                {"epl", std::int64_t{epl}},
                {"vec_bytes", std::int64_t{vec_bytes}},
                {"warps", std::int64_t{warps}}};
}

std::vector<ParamSpec> cuda_config_params() {
  return {int_param("lanes", 32, 1, 32, "lanes sharing one row (1, 2, 4, ..., 32): 32/lanes rows per warp"),
          int_param("epl", 8, 1, 32, "experts each lane holds in registers (lanes*epl >= experts)"),
          int_param("vec_bytes", 16, 2, 16, "bytes per logits load (2, 4, 8, 16); must divide the row"),
          int_param("warps", 4, 1, kMaxWarps, "warps per CTA (1, 2, 4, 8)")};
}

int cuda_shape_index(const RouterSpec& sp, const CudaConfig& c) {
  const int es = esize_of(sp);
  if (c.vec_bytes % es) return -1;
  for (int i = 0; i < kShapeCount; ++i) {
    const auto& s = kShapes[i];
    if (s.esize == es && s.lanes == c.lanes && s.epl == c.epl && s.vec * es == c.vec_bytes) return i;
  }
  return -1;
}

std::string cuda_invalid_reason(const RouterSpec& sp, const CudaConfig& c) {
  const std::int64_t E = sp.experts;
  if (E > kMaxExperts)
    return "the cuda router keeps a row in registers and handles up to " + std::to_string(kMaxExperts) +
           " experts, this problem has " + std::to_string(E) + ": use the cpu backend";
  if (!pow2(c.warps) || c.warps > kMaxWarps) return "warps must be 1, 2, 4 or 8, got " + std::to_string(c.warps);
  if (cuda_shape_index(sp, c) < 0)
    return "no kernel is compiled for lanes=" + std::to_string(c.lanes) + " epl=" + std::to_string(c.epl) +
           " vec_bytes=" + std::to_string(c.vec_bytes) + " with " + std::string(dtype_name(sp.dtype)) +
           " logits; compiled (lanes/epl/vec_bytes): " + compiled_list(esize_of(sp));
  if (E > std::int64_t{c.lanes} * c.epl)
    return "lanes*epl = " + std::to_string(c.lanes * c.epl) + " experts per row, fewer than the " +
           std::to_string(E) + " experts: raise lanes or epl";
  const int vec = c.vec_bytes / esize_of(sp);
  if (E % vec)
    return "vec_bytes=" + std::to_string(c.vec_bytes) + " loads " + std::to_string(vec) +
           " experts at once, which does not divide " + std::to_string(E) + ": use smaller loads";
  return "";
}

std::vector<CudaConfig> cuda_space(const RouterSpec& sp, bool full) {
  std::vector<CudaConfig> out;
  const int es = esize_of(sp);
  const std::vector<int> warps = full ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{4, 8};
  bool valid[kShapeCount];
  for (int i = 0; i < kShapeCount; ++i) {
    const auto& s = kShapes[i];
    valid[i] = s.esize == es && cuda_invalid_reason(sp, CudaConfig{s.lanes, s.epl, s.vec * es, 4}).empty();
  }
  // Curated: no shape that leaves most of its slots empty (unless none fits better), and
  // only the widest loads of each shape.
  std::int64_t roomiest = 8 * sp.experts, tightest = INT64_MAX;
  for (int i = 0; i < kShapeCount; ++i)
    if (valid[i]) tightest = std::min<std::int64_t>(tightest, std::int64_t{kShapes[i].lanes} * kShapes[i].epl);
  roomiest = std::max(roomiest, tightest);
  for (int i = 0; i < kShapeCount; ++i) {
    if (!valid[i]) continue;
    const auto& s = kShapes[i];
    CudaConfig c{s.lanes, s.epl, s.vec * es, 4};
    if (!full) {
      if (std::int64_t{s.lanes} * s.epl > roomiest) continue;
      bool wider = false;
      for (int o = 0; o < kShapeCount; ++o)
        wider = wider || (valid[o] && kShapes[o].lanes == s.lanes && kShapes[o].epl == s.epl && kShapes[o].vec > s.vec);
      if (wider) continue;
    }
    for (int w : warps) {
      c.warps = w;
      out.push_back(c);
    }
  }
  return out;
}

CudaConfig cuda_default(const RouterSpec& sp) {
  // Cost model, in warp-instructions per row: a selection step scans the lane's epl registers
  // (about 4 instructions each) and reduces over log2(lanes) shuffle steps (about 6), narrower
  // loads cost more, and the warp shares all of it among its 32/lanes rows. The slow
  // any-groups path is avoided whenever a layout can keep groups in lanes.
  double best_cost = 1e300;
  CudaConfig best;
  bool found = false;
  for (const auto& c : cuda_space(sp, true)) {
    if (c.warps != 4) continue;
    const int vec = c.vec_bytes / esize_of(sp);
    double cost = (4.0 * c.epl + 6 * std::log2(double(c.lanes)) + 4 * std::log2(16.0 / c.vec_bytes)) * c.lanes / 32;
    if (sp.grouped() && !lane_groups_fit(sp, c.lanes, vec)) cost += 1000;
    if (cost < best_cost) best_cost = cost, best = c, found = true;
  }
  if (!found) {
    const std::string why = cuda_invalid_reason(sp, CudaConfig{32, 32, 2, 4});
    throw Error("router: no cuda kernel can route " + sp.str() + (why.empty() ? "" : ": " + why));
  }
  return best;
}

kern::Args make_kernel_args(const RouterSpec& sp, const CudaConfig& c, const void* logits, const float* bias,
                            float* weights, std::int32_t* ids) {
  kern::Args a{};
  a.logits = logits;
  a.bias = sp.bias ? bias : nullptr;
  a.weights = weights;
  a.ids = ids;
  a.T = sp.tokens;
  a.E = static_cast<int>(sp.experts);
  a.k = static_cast<int>(sp.topk);
  a.S = static_cast<int>(sp.shared);
  a.G = static_cast<int>(sp.groups);
  a.TG = static_cast<int>(sp.topk_group);
  a.GS = static_cast<int>(sp.group_size());
  const int vec = c.vec_bytes / esize_of(sp);
  if (!sp.grouped()) {
    a.group_mode = kern::kNoGroups;
  } else if (lane_groups_fit(sp, c.lanes, vec)) {
    a.group_mode = kern::kLaneGroups;
    const int lpg = a.GS / vec;  // divides lanes, so a power of two
    while ((1 << a.lpg_shift) < lpg) ++a.lpg_shift;
    a.gpc = c.lanes * vec / a.GS;
  } else {
    a.group_mode = kern::kAnyGroups;
  }
  a.sigmoid = sp.scoring == RouterScoring::sigmoid;
  a.top2 = sp.group_score == GroupScore::top2_sum;
  a.renorm = sp.renormalize;
  a.bf16 = sp.dtype == DType::bf16;
  a.rsf = static_cast<float>(sp.rsf);
  return a;
}

}  // namespace moe::router
