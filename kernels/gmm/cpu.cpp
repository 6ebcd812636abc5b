// The cpu backend: the same tiles a GPU kernel would run, (expert, M-tile, N-tile) work items
// spread over threads, each tile accumulating in fp32 over BLOCK_K slices.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/parallel.hpp"
#include "gmm/detail.hpp"
#include "moe/error.hpp"

namespace moe::gmm {

namespace {

constexpr std::int64_t kBlockM[] = {8, 16, 32, 64};
constexpr std::int64_t kBlockN[] = {16, 32, 64, 128};
constexpr std::int64_t kBlockK[] = {64, 128, 256};

template <std::size_t N>
bool one_of(std::int64_t v, const std::int64_t (&set)[N]) {
  return std::find(std::begin(set), std::end(set), v) != std::end(set);
}

template <std::size_t N>
std::string list(const std::int64_t (&set)[N]) {
  std::string r;
  for (auto v : set) r += (r.empty() ? "" : ",") + std::to_string(v);
  return r;
}

// Operand conversion as a table: f16 decoding per element would dominate the inner loops.
const float* decode_table(DType t) {
  static const std::vector<float> bf = [] {
    std::vector<float> v(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) v[i] = bf16_to_float(static_cast<std::uint16_t>(i));
    return v;
  }();
  static const std::vector<float> hf = [] {
    std::vector<float> v(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) v[i] = f16_to_float(static_cast<std::uint16_t>(i));
    return v;
  }();
  return t == DType::bf16 ? bf.data() : hf.data();
}

struct Tile {
  std::int64_t e, row0, row1, col0, col1;
};

struct Cfg {
  std::int64_t bm, bn, bk;
};

Cfg parse_cfg(const Params& c) { return {c.i("block_m"), c.i("block_n"), c.i("block_k")}; }

void run(const Params& problem, const Params& config, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  const GmmSpec s = GmmSpec::parse(problem);
  const Cfg cfg = parse_cfg(config);
  const TensorRef& act = need(in, s.act_name());
  const TensorRef& wt = need(in, s.weight_name());
  const auto* off = need(in, "offsets").as<const std::int32_t>();
  const float* rw = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  const TensorRef& y = need(out, s.out_name());
  const std::int64_t K = s.k_dim(), NO = s.n_out(), NW = s.n_w(), I = s.intermediate, R = act.shape[0];
  const auto* A = act.as<const std::uint16_t>();
  const auto* W = wt.as<const std::uint16_t>();
  auto* Y = y.as<std::uint16_t>();
  const float* dec = decode_table(s.dtype);
  const bool bf16 = s.dtype == DType::bf16;

  std::vector<Tile> tiles;
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    const std::int64_t b = std::clamp<std::int64_t>(off[e], 0, R), x = std::clamp<std::int64_t>(off[e + 1], b, R);
    for (std::int64_t r = b; r < x; r += cfg.bm)
      for (std::int64_t c = 0; c < NO; c += cfg.bn) tiles.push_back({e, r, std::min(r + cfg.bm, x), c, std::min(c + cfg.bn, NO)});
  }

  const int parts = s.down ? 1 : 2;  // up: gate and up accumulators side by side
  parallel_for(static_cast<std::int64_t>(tiles.size()), ctx.threads, 1, [&](std::int64_t tb, std::int64_t te) {
    std::vector<float> a(static_cast<std::size_t>(cfg.bm * cfg.bk));
    std::vector<float> bt(static_cast<std::size_t>(cfg.bk * parts * cfg.bn));  // [k][part*bn + j]
    std::vector<float> acc(static_cast<std::size_t>(cfg.bm * parts * cfg.bn));
    for (std::int64_t ti = tb; ti < te; ++ti) {
      const Tile& t = tiles[ti];
      const std::int64_t m = t.row1 - t.row0, n = t.col1 - t.col0, ldb = parts * cfg.bn;
      const std::uint16_t* We = W + t.e * NW * K;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::int64_t k0 = 0; k0 < K; k0 += cfg.bk) {
        const std::int64_t kc = std::min(cfg.bk, K - k0);
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t k = 0; k < kc; ++k) a[i * cfg.bk + k] = dec[A[(t.row0 + i) * K + k0 + k]];
        for (int p = 0; p < parts; ++p)
          for (std::int64_t j = 0; j < n; ++j) {
            const std::uint16_t* wr = We + (p * I + t.col0 + j) * K + k0;
            for (std::int64_t k = 0; k < kc; ++k) bt[k * ldb + p * cfg.bn + j] = dec[wr[k]];
          }
        for (std::int64_t i = 0; i < m; ++i) {
          float* ar = acc.data() + i * ldb;
          for (std::int64_t k = 0; k < kc; ++k) {
            const float av = a[i * cfg.bk + k];
            const float* br = bt.data() + k * ldb;
            for (std::int64_t j = 0; j < ldb; ++j) ar[j] += av * br[j];
          }
        }
      }
      for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t r = t.row0 + i;
        const float* ar = acc.data() + i * ldb;
        for (std::int64_t j = 0; j < n; ++j) {
          float v = ar[j];
          if (!s.down) v = v / (1.0f + std::exp(-v)) * ar[cfg.bn + j];
          else if (rw) v *= rw[r];
          Y[r * NO + t.col0 + j] = bf16 ? float_to_bf16(v) : float_to_f16(v);
        }
      }
    }
  });
}

}  // namespace

BackendImpl cpu_backend() {
  BackendImpl b;
  b.backend = Backend::cpu;
  b.config_params = {
      int_param("block_m", 16, 8, 64, "rows per tile (8,16,32,64)"),
      int_param("block_n", 64, 16, 128, "output columns per tile (16,32,64,128); up: gate and up columns each"),
      int_param("block_k", 128, 64, 256, "reduction slice converted to fp32 at a time (64,128,256)"),
  };
  b.invalid_reason = [](const Params&, const Params& c, const DeviceInfo&) -> std::string {
    if (!one_of(c.i("block_m"), kBlockM)) return "block_m must be one of " + list(kBlockM);
    if (!one_of(c.i("block_n"), kBlockN)) return "block_n must be one of " + list(kBlockN);
    if (!one_of(c.i("block_k"), kBlockK)) return "block_k must be one of " + list(kBlockK);
    return {};
  };
  b.space = [](const Params& problem, const DeviceInfo&, bool full) {
    const GmmSpec s = GmmSpec::parse(problem);
    const double rows = s.avg_rows_per_expert();
    std::vector<Params> v;
    for (auto bm : kBlockM)
      for (auto bn : kBlockN)
        for (auto bk : kBlockK) {
          // Curated: tiles no taller than twice the typical segment, mid-size N and K slices.
          if (!full && ((bm > 8 && static_cast<double>(bm) > 2 * rows) || bn < 32 || bk == 64)) continue;
          v.push_back(Params{{"block_m", bm}, {"block_n", bn}, {"block_k", bk}});
        }
    return v;
  };
  b.default_config = [](const Params& problem, const DeviceInfo&) {
    const double rows = GmmSpec::parse(problem).avg_rows_per_expert();
    const std::int64_t bm = rows <= 8 ? 8 : rows <= 16 ? 16 : 32;
    return Params{{"block_m", bm}, {"block_n", std::int64_t{64}}, {"block_k", std::int64_t{128}}};
  };
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  b.run = run;
  return b;
}

}  // namespace moe::gmm
