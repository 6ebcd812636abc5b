#include "common/fp8_validate.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/fp8_reference.hpp"

namespace moe {

namespace {

constexpr std::int64_t kGroup = 128;  // one scale per 128 values of a row (DESIGN.md 1.6)
constexpr double kMax = 448.0;        // the largest e4m3 value

// e4m3 codes in value order: adjacent values differ by one.
int rank(std::uint8_t q) { return q & 0x80 ? -static_cast<int>(q & 0x7F) : static_cast<int>(q); }
bool is_nan_code(std::uint8_t q) { return (q & 0x7F) == 0x7F; }

float value(std::uint8_t q) { return static_cast<float>(fp8_reference::decode(q)); }
std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
// A scale in full: nine significant digits tell any two floats apart (std::to_string's six
// decimals print every scale of a quiet group as 0.000000), and %a shows the bits.
std::string show(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", static_cast<double>(v), static_cast<double>(v));
  return buf;
}

bool scale_close(float a, float b, bool ue8m0, double rtol) {
  if (std::isnan(a) || std::isnan(b)) return false;
  if (a == b) return true;
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  if (ue8m0) return a == 2 * b || b == 2 * a;
  if (std::fabs(static_cast<double>(a) - b) <= rtol * std::fabs(static_cast<double>(b))) return true;
  const std::int64_t d = static_cast<std::int64_t>(bits(a)) - static_cast<std::int64_t>(bits(b));
  return d == 1 || d == -1;
}

void note(Check& c, std::int64_t r, std::int64_t j, const std::string& what) {
  if (c.detail.empty()) c.detail = "at [" + std::to_string(r) + "," + std::to_string(j) + "] " + what;
}

}  // namespace

std::vector<Check> check_quantized(const std::string& name, const Tensor& gq, const Tensor& gs, const Tensor& rq,
                                   const Tensor& rs, bool ue8m0, const std::vector<char>* pad, double scale_rtol,
                                   double range_atol) {
  const std::string scale_name = name + "_scale";
  if (gq.shape() != rq.shape() || gs.shape() != rs.shape() || gq.dtype() != DType::e4m3 || gs.dtype() != DType::f32) {
    Check c;
    c.tensor = name + ", " + scale_name;
    c.ok = false;
    c.detail = "got " + std::string(dtype_name(gq.dtype())) + shape_str(gq.shape()) + " and " +
               std::string(dtype_name(gs.dtype())) + shape_str(gs.shape()) + ", want e4m3" + shape_str(rq.shape()) +
               " and f32" + shape_str(rs.shape());
    return {c};
  }
  const std::int64_t R = gq.shape()[0], N = gq.shape()[1], G = N / kGroup;
  const auto* g8 = gq.data<std::uint8_t>();
  const auto* r8 = rq.data<std::uint8_t>();
  const auto* gsc = gs.data<float>();
  const auto* rsc = rs.data<float>();
  Check sc, codes, deq;
  sc.tensor = scale_name + (scale_rtol > 0 ? " (within " + std::to_string(scale_rtol) + " relative of the reference's)"
                                            : std::string(" (within 1 ulp of the reference's)"));
  codes.tensor = name + (range_atol > 0 ? " (e4m3 codes within one step of the reference's, or within " +
                                              std::to_string(range_atol) + " of the group's range)"
                                        : std::string(" (e4m3 codes within one step of the reference's)"));
  deq.tensor = name + " dequantized (relative L2 vs the reference's)";
  double num = 0, den = 0;
  for (std::int64_t r = 0; r < R; ++r) {
    const bool computed = G == 0 || !std::isnan(rsc[r * G]);
    for (std::int64_t g = 0; g < G; ++g) {
      const float a = gsc[r * G + g], b = rsc[r * G + g];
      if (is_poison(DType::f32, &gsc[r * G + g])) {
        ++sc.unwritten;
        note(sc, r, g, "never written");
      } else if (computed ? !scale_close(a, b, ue8m0, scale_rtol) : !std::isfinite(a)) {
        ++sc.mismatches;
        note(sc, r, g, "is " + show(a) + (computed ? ", want " + show(b) : ""));
      }
    }
    for (std::int64_t j = 0; j < N; ++j) {
      const std::uint8_t a = g8[r * N + j], b = r8[r * N + j];
      if (is_poison(DType::e4m3, &a)) {
        ++codes.unwritten;
        note(codes, r, j, "never written");
      } else if (pad && (*pad)[static_cast<std::size_t>(r)] && (a & 0x7F) != 0) {
        ++codes.mismatches;
        note(codes, r, j, "is " + std::to_string(value(a)) + " on a padding (all-zero input) row, want 0");
      } else if (!computed) {
        if (is_nan_code(a)) ++codes.nans, note(codes, r, j, "is NaN");
      } else if (is_nan_code(a) != is_nan_code(b)) {
        ++codes.nans;
        note(codes, r, j, is_nan_code(a) ? "is NaN, the reference's is not" : "is not NaN, the reference's is");
      } else if (!is_nan_code(a)) {
        const double gv = static_cast<double>(value(a)) * gsc[r * G + j / kGroup];
        const double rv = static_cast<double>(value(b)) * rsc[r * G + j / kGroup];
        const double range = kMax * static_cast<double>(rsc[r * G + j / kGroup]);
        if (std::abs(rank(a) - rank(b)) > 1 && !(std::fabs(gv - rv) <= range_atol * range)) {
          ++codes.mismatches;
          note(codes, r, j,
               "is " + std::to_string(value(a)) + ", the reference's " + std::to_string(value(b)) +
                   ": more than one e4m3 step apart");
        }
        if (std::isfinite(gv) && std::isfinite(rv)) num += (gv - rv) * (gv - rv), den += rv * rv;
      }
    }
  }
  sc.ok = sc.unwritten == 0 && sc.mismatches == 0;
  codes.ok = codes.unwritten == 0 && codes.nans == 0 && codes.mismatches == 0;
  deq.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  // One step is at most 2^-3 relative; steps are rare (a 1-ulp scale, a rounding tie), so the
  // L2 stays far below one unless whole groups are off.
  deq.tolerance = 2e-2;
  deq.ok = deq.rel_l2 <= deq.tolerance;
  if (!deq.ok) deq.detail = "relative L2 " + std::to_string(deq.rel_l2) + " > " + std::to_string(deq.tolerance);
  return {codes, sc, deq};
}

}  // namespace moe
