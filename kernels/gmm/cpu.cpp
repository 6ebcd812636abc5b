// The cpu backend: (expert, M-tile, N-tile) work items, taken by the threads from a shared
// counter. A tile converts its activation rows to fp32 once, then streams its weight rows kNR
// at a time: each converted whole (the weights stay K-contiguous, so no transpose), then
// multiplied with every row of the tile by register-blocked dot products, kMR rows x kNR
// weight rows of 8-lane fp32 accumulators, block_k of the reduction at a time.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/parallel.hpp"
#include "gmm/detail.hpp"
#include "moe/error.hpp"

// The binary is built for the baseline ISA; on x86-64 the hot loops are also compiled for
// AVX2+FMA (x86-64-v3), picked at load time. `acc += a * w` becomes an FMA by the compilers'
// default floating-point contraction for C++.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MOE_GMM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MOE_GMM_CPU_CLONES
#endif

#if defined(__GNUC__)
#define MOE_GMM_CPU_INLINE __attribute__((always_inline)) inline
#else
#define MOE_GMM_CPU_INLINE inline
#endif

namespace moe::gmm {

namespace {

constexpr std::int64_t kBlockM[] = {8, 16, 32, 64};
constexpr std::int64_t kBlockN[] = {16, 32, 64, 128};
constexpr std::int64_t kBlockK[] = {64, 128, 256, 512, 1024};

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

// Whether a smaller value of `set` (from `from` on) already covers `extent`: then `v` tiles it
// the same way.
template <std::size_t N>
bool covered(std::int64_t v, std::int64_t extent, const std::int64_t (&set)[N], std::int64_t from) {
  return std::any_of(std::begin(set), std::end(set), [&](std::int64_t u) { return u >= from && u < v && u >= extent; });
}

// One accumulator: 8 fp32 lanes, an AVX2 register (two SSE or NEON registers elsewhere).
constexpr std::int64_t kLanes = 8;
#if defined(__GNUC__)
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));
typedef float Quad __attribute__((vector_size(4 * sizeof(float))));
// The lane sums of four accumulators in ~10 instructions instead of ~30: pairwise sums
// ([a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, ...], AVX2's horizontal add) twice, then the halves.
MOE_GMM_CPU_INLINE Quad sums(const Lanes& a, const Lanes& b, const Lanes& c, const Lanes& d) {
  const Lanes ab = __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14) + __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
  const Lanes cd = __builtin_shufflevector(c, d, 0, 2, 8, 10, 4, 6, 12, 14) + __builtin_shufflevector(c, d, 1, 3, 9, 11, 5, 7, 13, 15);
  const Lanes h =
      __builtin_shufflevector(ab, cd, 0, 2, 8, 10, 4, 6, 12, 14) + __builtin_shufflevector(ab, cd, 1, 3, 9, 11, 5, 7, 13, 15);
  return __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
}
#else
struct Lanes {
  float v[kLanes] = {};
  friend Lanes operator*(Lanes a, const Lanes& b) {
    for (int i = 0; i < kLanes; ++i) a.v[i] *= b.v[i];
    return a;
  }
  Lanes& operator+=(const Lanes& b) {
    for (int i = 0; i < kLanes; ++i) v[i] += b.v[i];
    return *this;
  }
};
struct Quad {
  float v[4];
  float operator[](int i) const { return v[i]; }
};
inline Quad sums(const Lanes& a, const Lanes& b, const Lanes& c, const Lanes& d) {
  Quad q{};
  for (int i = 0; i < kLanes; ++i) {
    q.v[0] += a.v[i];
    q.v[1] += b.v[i];
    q.v[2] += c.v[i];
    q.v[3] += d.v[i];
  }
  return q;
}
#endif
// kMR x 4 accumulators + 4 weight vectors + 1 activation vector fit the 16 AVX2 registers;
// four weight rows per block let one horizontal reduction serve four outputs.
constexpr int kMR = 3, kNR = 4;

std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// c[i][j] += a row i . w row j over kc (a multiple of kLanes; the slices are zero-padded).
template <int MR>
MOE_GMM_CPU_INLINE void dot_block(const float* a, std::int64_t lda, const float* w, std::int64_t ldw, std::int64_t kc,
                                  float* c, std::int64_t ldc) {
  Lanes acc[MR][kNR] = {};
  for (std::int64_t k = 0; k < kc; k += kLanes) {
    Lanes wv[kNR];
#pragma GCC unroll 4
    for (int j = 0; j < kNR; ++j) std::memcpy(&wv[j], w + j * ldw + k, sizeof(Lanes));
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      Lanes av;
      std::memcpy(&av, a + i * lda + k, sizeof av);
#pragma GCC unroll 4
      for (int j = 0; j < kNR; ++j) acc[i][j] += av * wv[j];
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    const Quad q = sums(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
#pragma GCC unroll 4
    for (int j = 0; j < kNR; ++j) c[i * ldc + j] += q[j];
  }
}

// f16 -> fp32, exact and branch-free so the loops vectorize: the 15 magnitude bits moved
// into fp32 position read as the value times 2^-112 (subnormals too), and exponent 31 is
// inf/NaN.
MOE_GMM_CPU_INLINE float f16_value(std::uint16_t h) {
  const std::uint32_t mag = std::uint32_t{h & 0x7FFFu} << 13;
  float f;
  std::memcpy(&f, &mag, sizeof f);
  f *= 0x1p112f;
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const std::uint32_t special = 0u - std::uint32_t{(h & 0x7C00u) == 0x7C00u};
  u = (u & ~special) | ((mag | 0x7F800000u) & special);
  u |= std::uint32_t{h & 0x8000u} << 16;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// n values to fp32, then zeros up to n_pad. bf16 is the top half of an fp32: a shift.
MOE_GMM_CPU_INLINE void to_f32(const std::uint16_t* src, std::int64_t n, std::int64_t n_pad, bool f16, float* dst) {
  if (f16) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = f16_value(src[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint32_t u = std::uint32_t{src[i]} << 16;
      std::memcpy(dst + i, &u, sizeof u);
    }
  }
  std::fill(dst + n, dst + n_pad, 0.0f);
}

// Round to nearest even as moe::float_to_bf16 does, inline: the down stage stores one output
// per ~K/8 vector FMAs, where a call per element shows.
MOE_GMM_CPU_INLINE std::uint16_t to_bf16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if (std::isnan(v)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  return static_cast<std::uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

// moe::float_to_f16 is a call with branches per element, as slow as the down stage's math;
// the compiler's _Float16 conversion rounds the same way (one instruction with F16C).
MOE_GMM_CPU_INLINE std::uint16_t to_f16(float v) {
#if defined(__FLT16_MAX__)
  const auto h = static_cast<_Float16>(v);
  std::uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
#else
  return float_to_f16(v);
#endif
}

// Asks for base[at, at + n) (what lies inside [0, size)) to be brought into the cache.
MOE_GMM_CPU_INLINE void prefetch(const std::uint16_t* base, std::int64_t size, std::int64_t at, std::int64_t n) {
#if defined(__GNUC__)
  for (std::int64_t i = at; i < std::min(at + n, size); i += 64 / sizeof(std::uint16_t)) __builtin_prefetch(base + i);
#endif
}

bool zero_row(const std::uint16_t* p, std::int64_t n) {
  std::uint16_t any = 0;
  for (std::int64_t i = 0; i < n; ++i) any |= p[i];
  return any == 0;
}

struct Tile {
  std::int64_t e, row0, row1, col0, col1;
};

struct Cfg {
  std::int64_t bm, bn, bk;
};

Cfg parse_cfg(const Params& c) { return {c.i("block_m"), c.i("block_n"), c.i("block_k")}; }

// Everything the tiles share.
struct Job {
  const std::uint16_t* A;  // [R, K]
  const std::uint16_t* W;  // [E, NW, K]; null for 4-bit weights (w4)
  std::int64_t W_size;     // elements
  const W4Rows* w4;        // 4-bit weights, dequantized a row at a time; else null
  std::uint16_t* Y;        // [R, NO]
  const float* rw;         // [R] or null
  const std::uint16_t* B;  // this stage's bias, [E, NW] (up) or [E, NO] (down), or null
  bool f16;                // else bf16
  std::int64_t K, NO, NW, I;
  int parts;  // up: 2, the gate and up columns' sums side by side
  const GmmSpec* spec;  // the activation and w13's row order
  Cfg cfg;
};

MOE_GMM_CPU_INLINE float value_f32(const std::uint16_t* p, bool f16) {
  float f;
  to_f32(p, 1, 1, f16, &f);
  return f;
}

// h from one gate and up sum (bias included), in fp32.
MOE_GMM_CPU_INLINE float activate(const GmmSpec& s, float g, float u) {
  if (!s.swiglu_oai) return g / (1.0f + std::exp(-g)) * u;
  const auto limit = static_cast<float>(s.limit), alpha = static_cast<float>(s.alpha);
  g = g > limit ? limit : g;
  u = u > limit ? limit : u < -limit ? -limit : u;
  return (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
}

// A thread's fp32 buffers: the tile's activation rows [bm][Kp], a group's weight rows
// [kNR][Kp] (Kp: K rounded up to whole lanes, zero-padded), the tile's sums [bm][nw].
struct Scratch {
  std::vector<float> a, w, c;
  explicit Scratch(const Job& j) {
    a.resize(static_cast<std::size_t>(j.cfg.bm * round_up(j.K, kLanes)));
    w.resize(static_cast<std::size_t>(kNR * round_up(j.K, kLanes)));
    c.resize(static_cast<std::size_t>(j.cfg.bm * round_up(j.parts * j.cfg.bn, kNR)));
  }
};

// How far ahead (at least a group) the weights are prefetched: measured here, the hardware
// prefetcher alone left the weight stream at half the DRAM bandwidth, and a group's math hid
// none of its loads.
constexpr std::int64_t kPrefetchBytes = 4096;

MOE_GMM_CPU_CLONES void run_tile(const Job& j, const Tile& t, Scratch& s) {
  const std::int64_t K = j.K, Kp = round_up(K, kLanes), n = t.col1 - t.col0, nw = round_up(j.parts * n, kNR);
  // Padding rows (all zero, at the end of a segment) give exactly zero outputs: skip their math.
  std::int64_t row1 = t.row1;
  while (row1 > t.row0 && zero_row(j.A + (row1 - 1) * K, K)) --row1;
  const std::int64_t m = row1 - t.row0;
  float* a = s.a.data();
  float* w = s.w.data();
  float* c = s.c.data();
  for (std::int64_t i = 0; i < m; ++i) to_f32(j.A + (t.row0 + i) * K, K, Kp, j.f16, a + i * Kp);
  std::fill(c, c + m * nw, 0.0f);
  // kNR weight rows at a time: sums column g + q is gate column g + q for g + q < n, up
  // column g + q - n above (up); rows past the tile are zero.
  const auto group = [&](std::int64_t g, std::int64_t* rows) {
    for (int q = 0; q < kNR; ++q) {
      const std::int64_t col = g + q, p = col / n;
      rows[q] = col < j.parts * n ? t.e * j.NW + (j.parts == 2 ? j.spec->w13_row(static_cast<int>(p), t.col0 + col - p * n)
                                                              : t.col0 + col)
                                 : -1;
    }
  };
  // Each row is converted start to end, a DRAM-friendly stream. While a group's math runs,
  // the weights `ahead` rows further on (a later group, maybe the next tile's) are
  // prefetched a slice at a time, so memory and math overlap.
  const std::int64_t ahead = kNR * std::max<std::int64_t>(1, kPrefetchBytes / (kNR * K * 2));
  for (std::int64_t g = 0; g < nw && m > 0; g += kNR) {
    std::int64_t rows[kNR];
    group(g, rows);
    for (int q = 0; q < kNR; ++q) {
      if (rows[q] < 0) std::fill(w + q * Kp, w + (q + 1) * Kp, 0.0f);
      else if (j.w4) w4_row_to_f32(*j.w4, rows[q], Kp, w + q * Kp);
      else to_f32(j.W + rows[q] * K, K, Kp, j.f16, w + q * Kp);
    }
    for (std::int64_t k0 = 0; k0 < K; k0 += j.cfg.bk) {
      const std::int64_t kn = std::min(j.cfg.bk, K - k0), kc = round_up(kn, kLanes);
      for (int q = 0; q < kNR; ++q)
        if (rows[q] >= 0 && !j.w4) prefetch(j.W, j.W_size, rows[q] * K + ahead * K + k0, kn);
      for (std::int64_t i = 0; i < m; i += kMR) {
        const float* ai = a + i * Kp + k0;
        float* ci = c + i * nw + g;
        switch (std::min<std::int64_t>(kMR, m - i)) {
          case 3: dot_block<3>(ai, Kp, w + k0, Kp, kc, ci, nw); break;
          case 2: dot_block<2>(ai, Kp, w + k0, Kp, kc, ci, nw); break;
          default: dot_block<1>(ai, Kp, w + k0, Kp, kc, ci, nw); break;
        }
      }
    }
  }
  for (std::int64_t i = 0; i < t.row1 - t.row0; ++i) {
    const std::int64_t r = t.row0 + i;
    std::uint16_t* y = j.Y + r * j.NO + t.col0;
    if (i >= m) {
      std::fill(y, y + n, std::uint16_t{0});
      continue;
    }
    const float* ci = c + i * nw;
    // A padding row inside the tile stays zero with a bias too (trailing ones were skipped above).
    if (j.B && zero_row(j.A + r * K, K)) {
      std::fill(y, y + n, std::uint16_t{0});
      continue;
    }
    if (j.B || j.spec->swiglu_oai) {
      const std::uint16_t* b = j.B ? j.B + t.e * (j.parts == 2 ? j.NW : j.NO) : nullptr;
      for (std::int64_t jj = 0; jj < n; ++jj) {
        const std::int64_t col = t.col0 + jj;
        float v = ci[jj];
        if (j.parts == 2) {
          float u = ci[n + jj];
          if (b) {
            v += value_f32(b + j.spec->w13_row(0, col), j.f16);
            u += value_f32(b + j.spec->w13_row(1, col), j.f16);
          }
          v = activate(*j.spec, v, u);
        } else {
          if (b) v += value_f32(b + col, j.f16);
          if (j.rw) v *= j.rw[r];
        }
        y[jj] = j.f16 ? to_f16(v) : to_bf16(v);
      }
      continue;
    }
    for (std::int64_t jj = 0; jj < n; ++jj) {
      float v = ci[jj];
      if (j.parts == 2) v = v / (1.0f + std::exp(-v)) * ci[n + jj];
      else if (j.rw) v *= j.rw[r];
      y[jj] = j.f16 ? to_f16(v) : to_bf16(v);
    }
  }
}

void run(const Params& problem, const Params& config, const RefMap& in, const RefMap& out, const LaunchContext& ctx) {
  const GmmSpec s = GmmSpec::parse(problem);
  check_host_offsets(need(in, "offsets").as<const std::int32_t>(), s.e_local() + 1, need(in, s.act_name()).shape.at(0));
  if (s.fp8) return run_fp8_cpu(s, config.i("block_m"), in, out, ctx.threads);
  const TensorRef& act = need(in, s.act_name());
  const auto* off = need(in, "offsets").as<const std::int32_t>();
  Job j{};
  j.A = act.as<const std::uint16_t>();
  const W4Rows w4 = s.w4() ? w4_rows(s, in) : W4Rows{};
  j.w4 = s.w4() ? &w4 : nullptr;
  j.W = s.w4() ? nullptr : need(in, s.weight_name()).as<const std::uint16_t>();
  j.W_size = s.e_local() * s.n_w() * s.k_dim();
  j.Y = need(out, s.out_name()).as<std::uint16_t>();
  j.rw = s.routed_weight ? need(in, "row_weight").as<const float>() : nullptr;
  j.B = s.biased() ? need(in, s.bias_name()).as<const std::uint16_t>() : nullptr;
  j.spec = &s;
  j.f16 = s.dtype == DType::f16;
  j.K = s.k_dim();
  j.NO = s.n_out();
  j.NW = s.n_w();
  j.I = s.intermediate;
  j.parts = s.down ? 1 : 2;
  j.cfg = parse_cfg(config);
  const std::int64_t R = act.shape[0];

  // M-tiles inside N-tiles: an expert's next M-tile wants the same weight rows, still cached.
  std::vector<Tile> tiles;
  for (std::int64_t e = 0; e < s.e_local(); ++e) {
    const std::int64_t b = std::clamp<std::int64_t>(off[e], 0, R), x = std::clamp<std::int64_t>(off[e + 1], b, R);
    for (std::int64_t c = 0; c < j.NO && b < x; c += j.cfg.bn)
      for (std::int64_t r = b; r < x; r += j.cfg.bm)
        tiles.push_back({e, r, std::min(r + j.cfg.bm, x), c, std::min(c + j.cfg.bn, j.NO)});
  }

  // Tiles differ in cost (padding rows are skipped): threads take the next one as they finish.
  const auto n = static_cast<std::int64_t>(tiles.size());
  std::atomic<std::int64_t> next{0};
  const std::int64_t workers = std::clamp<std::int64_t>(ctx.threads, 1, std::max<std::int64_t>(n, 1));
  parallel_for(workers, static_cast<int>(workers), 1, [&](std::int64_t, std::int64_t) {
    Scratch scratch(j);
    for (std::int64_t i = next++; i < n; i = next++) run_tile(j, tiles[static_cast<std::size_t>(i)], scratch);
  });
}

}  // namespace

BackendImpl cpu_backend() {
  BackendImpl b;
  b.backend = Backend::cpu;
  b.config_params = {
      int_param("block_m", 32, 8, 64,
                "rows per tile (8,16,32,64): converted to fp32 once, each weight row is reused across them; "
                "trailing padding rows cost nothing"),
      int_param("block_n", 128, 16, 128, "output columns per tile (16,32,64,128); up: gate and up columns each"),
      int_param("block_k", 512, 64, 1024,
                "reduction slice (64,128,256,512,1024) summed in registers before it is folded into the tile's "
                "fp32 sums: longer means fewer folds, shorter stays in L1"),
  };
  b.invalid_reason = [](const Params& problem, const Params& c, const DeviceInfo&) -> std::string {
    if (!one_of(c.i("block_m"), kBlockM)) return "block_m must be one of " + list(kBlockM);
    if (!one_of(c.i("block_n"), kBlockN)) return "block_n must be one of " + list(kBlockN);
    if (!one_of(c.i("block_k"), kBlockK)) return "block_k must be one of " + list(kBlockK);
    // fp8 tiles are the scale blocks: a K slice per scale, whole h groups to requantize.
    if (problem.has("dtype") && problem.s("dtype") == "fp8" && (c.i("block_n") != 128 || c.i("block_k") != 128))
      return "fp8 takes block_n=128 and block_k=128 (the 128-wide scale blocks)";
    return {};
  };
  b.space = [](const Params& problem, const DeviceInfo&, bool full) {
    const GmmSpec s = GmmSpec::parse(problem);
    const double rows = s.avg_rows_per_expert();
    std::vector<Params> v;
    if (s.fp8) {
      for (auto bm : kBlockM)
        if (full || bm == 8 || static_cast<double>(bm / 2) < 2 * rows)
          v.push_back(Params{{"block_m", bm}, {"block_n", std::int64_t{128}}, {"block_k", std::int64_t{128}}});
      return v;
    }
    for (auto bm : kBlockM)
      for (auto bn : kBlockN)
        for (auto bk : kBlockK) {
          // Curated: tiles up to the first block_m covering twice the typical segment (taller
          // ones only take more scratch), block_n from 32 and block_k from 256 (shorter means
          // more tiles or more folds), and no two configs that tile this problem alike.
          if (!full && ((bm > 8 && static_cast<double>(bm / 2) >= 2 * rows) || bn < 32 || bk < 256 || covered(bn, s.n_out(), kBlockN, 32) ||
                        covered(bk, s.k_dim(), kBlockK, 256)))
            continue;
          v.push_back(Params{{"block_m", bm}, {"block_n", bn}, {"block_k", bk}});
        }
    return v;
  };
  b.default_config = [](const Params& problem, const DeviceInfo& dev) {
    const GmmSpec s = GmmSpec::parse(problem);
    const double rows = s.avg_rows_per_expert();
    std::int64_t bm = 8;
    while (bm < 64 && static_cast<double>(bm) < 2 * rows) bm *= 2;
    // The widest tiles (fewest activation conversions, longest weight streams) that still
    // give every thread a few tiles, none wider than the problem; slices as long as fit L1.
    const double active = std::min<double>(static_cast<double>(s.e_local()), static_cast<double>(s.tokens * s.slots()));
    const double m_tiles = std::ceil(rows / static_cast<double>(bm)), NO = static_cast<double>(s.n_out());
    std::int64_t bn = 128;
    while (bn > 32 && (static_cast<double>(bn / 2) >= NO || active * m_tiles * std::ceil(NO / static_cast<double>(bn)) < 4.0 * dev.threads))
      bn /= 2;
    const std::int64_t bk = s.k_dim() <= 256 ? 256 : 512;
    if (s.fp8) return Params{{"block_m", bm}, {"block_n", std::int64_t{128}}, {"block_k", std::int64_t{128}}};
    return Params{{"block_m", bm}, {"block_n", bn}, {"block_k", bk}};
  };
  b.workspace_bytes = [](const Params&, const Params&) { return std::size_t{0}; };
  b.run = run;
  return b;
}

}  // namespace moe::gmm
